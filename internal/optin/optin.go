// Package optin reads the annotations and labels by which a MyDeployment
// opts into behaviour beyond Deployment (see the constants in api/v1beta1):
// one parser for the controller, the webhook and the kubectl plugin, so
// that what admission refuses and what the controller refuses to act on
// are the same thing, with the same message.
package optin

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Options are the opt-in behaviours of one MyDeployment. The zero value is
// plain Deployment behaviour.
type Options struct {
	// Partition holds pods on the current revision during a RollingUpdate;
	// nil when the annotation is absent.
	Partition *Partition
	// RespectPDB removes the pods a rollout or a specified delete replaces
	// through the Eviction API.
	RespectPDB bool
	// InPlace updates pods in place where the template change allows it
	// (UpdateModeAnnotation InPlaceIfPossible).
	InPlace bool
	// Canary is the canary step list and where the rollout is in it
	// (CanaryStepsAnnotation); nil when the annotation is absent.
	Canary *Canary
	// Analysis gates each canary step on metric queries
	// (AnalysisAnnotation); nil when the annotation is absent.
	Analysis *Analysis
	// Abort moves every pod back to the current revision once a rollout
	// exceeds its progress deadline (OnFailureAnnotation Abort).
	Abort bool
	// RetriedAt is when `rollout retry` last started an aborted rollout
	// over (RetriedAtAnnotation); zero if never.
	RetriedAt time.Time
	// Drain replaces pods on draining nodes surge-first (DrainAnnotation
	// SurgeFirst).
	Drain bool
	// AdoptFrom names the Deployment whose pods the MyDeployment takes
	// over (AdoptFromAnnotation); "" when the annotation is absent.
	AdoptFrom string
	// AdoptRevisions maps a ReplicaSet's pod-template-hash to the revision
	// its pods are adopted into (AdoptRevisionsAnnotation); nil when the
	// annotation is absent, empty when it is "{}".
	AdoptRevisions map[string]string
	// RolloutOnConfigChange makes the data of the referenced ConfigMaps and
	// Secrets part of the revision (RolloutOnConfigChangeAnnotation "true").
	RolloutOnConfigChange bool
}

// Partition is a parsed PartitionAnnotation: a count, or a percentage of
// spec.replicas.
type Partition struct {
	Value   int32
	Percent bool
}

// String is the annotation value p was parsed from (canonical form).
func (p Partition) String() string {
	if p.Percent {
		return strconv.Itoa(int(p.Value)) + "%"
	}
	return strconv.Itoa(int(p.Value))
}

// Pods is how many pods p holds on the current revision out of replicas:
// a percentage rounded up (as StatefulSet and CloneSet round a partition),
// never more than replicas nor less than 0.
func (p *Partition) Pods(replicas int32) int32 {
	if p == nil || replicas <= 0 {
		return 0
	}
	n := int64(p.Value)
	if p.Percent {
		n = (int64(p.Value)*int64(replicas) + 99) / 100
	}
	return int32(min(max(n, 0), int64(replicas)))
}

// Path is the field path of an annotation, as admission errors name it.
func Path(annotation string) *field.Path {
	return field.NewPath("metadata", "annotations").Key(annotation)
}

// Parse reads md's opt-in annotations. Each value that can never work is an
// error naming its annotation: a partition that is not a non-negative
// integer or a percentage from 0% to 100%, a partition with strategy
// Recreate, a respect-pdb other than "true" or "false", an update-mode
// other than Recreate or InPlaceIfPossible, InPlaceIfPossible with strategy
// Recreate, canary steps that parseCanary refuses, an on-failure other
// than Continue or Abort, Abort with strategy Recreate, a retried-at that
// is not an RFC 3339 time, a drain other than SurgeFirst or with strategy
// Recreate, an analysis ParseAnalysis refuses or without canary steps,
// a rollout-on-config-change other than "true" or "false", an
// adopt-from other than Deployment/<name>, an adopt-revisions that is not a
// JSON object of hashes to revision names. The Options returned hold what
// could be parsed.
func Parse(md *appsv1beta1.MyDeployment) (Options, field.ErrorList) {
	var (
		o    Options
		errs field.ErrorList
	)
	if v, ok := md.Annotations[appsv1beta1.PartitionAnnotation]; ok {
		p, err := ParsePartition(v)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(Path(appsv1beta1.PartitionAnnotation), v, err.Error()))
		case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
			errs = append(errs, field.Forbidden(Path(appsv1beta1.PartitionAnnotation),
				"a partition needs spec.strategy.type RollingUpdate: Recreate replaces every pod at once"))
		default:
			o.Partition = &p
		}
	}
	if v, ok := md.Annotations[appsv1beta1.RespectPDBAnnotation]; ok {
		b, err := parseBool(v)
		if err != nil {
			errs = append(errs, field.NotSupported(Path(appsv1beta1.RespectPDBAnnotation), v, []string{"true", "false"}))
		}
		o.RespectPDB = b
	}
	if v, ok := md.Annotations[appsv1beta1.UpdateModeAnnotation]; ok {
		switch {
		case v != appsv1beta1.UpdateModeRecreate && v != appsv1beta1.UpdateModeInPlaceIfPossible:
			errs = append(errs, field.NotSupported(Path(appsv1beta1.UpdateModeAnnotation), v,
				[]string{appsv1beta1.UpdateModeRecreate, appsv1beta1.UpdateModeInPlaceIfPossible}))
		case v == appsv1beta1.UpdateModeInPlaceIfPossible && md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
			errs = append(errs, field.Forbidden(Path(appsv1beta1.UpdateModeAnnotation),
				"InPlaceIfPossible needs spec.strategy.type RollingUpdate: Recreate promises that no pod of the old template runs beside one of the new"))
		default:
			o.InPlace = v == appsv1beta1.UpdateModeInPlaceIfPossible
		}
	}
	if v, ok := md.Annotations[appsv1beta1.DrainAnnotation]; ok {
		switch {
		case v != appsv1beta1.DrainSurgeFirst:
			errs = append(errs, field.NotSupported(Path(appsv1beta1.DrainAnnotation), v, []string{appsv1beta1.DrainSurgeFirst}))
		case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
			errs = append(errs, field.Forbidden(Path(appsv1beta1.DrainAnnotation),
				"SurgeFirst needs spec.strategy.type RollingUpdate: Recreate removes a pod before it creates one"))
		default:
			o.Drain = true
		}
	}
	canary, canaryErrs := parseCanary(md)
	o.Canary = canary
	errs = append(errs, canaryErrs...)
	_, hasSteps := md.Annotations[appsv1beta1.CanaryStepsAnnotation]
	o.Analysis, errs = parseAnalysis(md, hasSteps, errs)
	o.Abort, errs = parseOnFailure(md, errs)
	o.RetriedAt, errs = parseRetriedAt(md, errs)
	o.AdoptFrom, errs = parseAdoptFrom(md, errs)
	o.AdoptRevisions, errs = parseAdoptRevisions(md, errs)
	if v, ok := md.Annotations[appsv1beta1.RolloutOnConfigChangeAnnotation]; ok {
		b, err := parseBool(v)
		if err != nil {
			errs = append(errs, field.NotSupported(Path(appsv1beta1.RolloutOnConfigChangeAnnotation), v, []string{"true", "false"}))
		}
		o.RolloutOnConfigChange = b
	}
	return o, errs
}

// parseOnFailure reads OnFailureAnnotation: Abort (not with Recreate) or
// Continue; anything else is an error appended to errs.
func parseOnFailure(md *appsv1beta1.MyDeployment, errs field.ErrorList) (bool, field.ErrorList) {
	v, ok := md.Annotations[appsv1beta1.OnFailureAnnotation]
	switch {
	case !ok || v == appsv1beta1.OnFailureContinue:
		return false, errs
	case v != appsv1beta1.OnFailureAbort:
		return false, append(errs, field.NotSupported(Path(appsv1beta1.OnFailureAnnotation), v,
			[]string{appsv1beta1.OnFailureContinue, appsv1beta1.OnFailureAbort}))
	case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		return false, append(errs, field.Forbidden(Path(appsv1beta1.OnFailureAnnotation),
			"Abort needs spec.strategy.type RollingUpdate: Recreate has no stable pods left to go back to"))
	}
	return true, errs
}

// parseRetriedAt reads RetriedAtAnnotation, an RFC 3339 time; anything
// else is an error appended to errs.
func parseRetriedAt(md *appsv1beta1.MyDeployment, errs field.ErrorList) (time.Time, field.ErrorList) {
	v, ok := md.Annotations[appsv1beta1.RetriedAtAnnotation]
	if !ok {
		return time.Time{}, errs
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, append(errs, field.Invalid(Path(appsv1beta1.RetriedAtAnnotation), v,
			"must be an RFC 3339 time, as `kubectl mydeployment rollout retry` writes it"))
	}
	return t, errs
}

// Annotations are the opt-in annotations of a MyDeployment, in the order
// their errors are reported.
var Annotations = []string{appsv1beta1.PartitionAnnotation, appsv1beta1.RespectPDBAnnotation, appsv1beta1.UpdateModeAnnotation,
	appsv1beta1.CanaryStepsAnnotation, appsv1beta1.CanaryStepAnnotation, appsv1beta1.CanaryPromoteAnnotation,
	appsv1beta1.AnalysisAnnotation, appsv1beta1.OnFailureAnnotation, appsv1beta1.RetriedAtAnnotation, appsv1beta1.DrainAnnotation,
	appsv1beta1.RolloutOnConfigChangeAnnotation, appsv1beta1.AdoptFromAnnotation, appsv1beta1.AdoptRevisionsAnnotation}

// ParsePartition parses a PartitionAnnotation value: "<n>" with n from 0 to
// 2147483647, or "<p>%" with p from 0 to 100.
func ParsePartition(v string) (Partition, error) {
	const want = `must be a non-negative integer ("8") or a percentage from 0% to 100% ("80%")`
	s, percent := strings.CutSuffix(v, "%")
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 || s != strconv.FormatInt(n, 10) || percent && n > 100 {
		return Partition{}, fmt.Errorf("%s", want)
	}
	return Partition{Value: int32(min(n, math.MaxInt32)), Percent: percent}, nil
}

func parseBool(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither true nor false", v)
}

// SpecifiedDelete reports whether pod is labelled to go first
// (SpecifiedDeleteLabel "true"). The caller checks the pod is its own.
func SpecifiedDelete(pod *corev1.Pod) bool {
	return pod.Labels[appsv1beta1.SpecifiedDeleteLabel] == "true"
}

// NodeDraining says node is being drained as DrainAnnotation means it:
// cordoned, or tainted for removal by the Cluster Autoscaler or Karpenter.
func NodeDraining(node *corev1.Node) bool {
	if node.Spec.Unschedulable {
		return true
	}
	for _, t := range node.Spec.Taints {
		if t.Key == appsv1beta1.TaintToBeDeleted || t.Key == appsv1beta1.TaintKarpenterDisrupted {
			return true
		}
	}
	return false
}
