// Package optin is the contract of the opt-ins, the annotations and labels
// by which a MyDeployment opts into behaviour beyond Deployment (see the
// constants in api/v1beta1): a Module per opt-in, each in its own package
// under internal/optin, listed in internal/optin/modules, whose Parse is
// the one parser for the controller, the webhook and the kubectl plugin,
// so that what admission refuses and what the controller refuses to act on
// are the same thing, with the same message. It also reads the records the
// controller keeps on the object (Records), and, until every opt-in is a
// module, parses the rest (ParseRest).
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

// Options are the opt-in behaviours of one MyDeployment that are not
// modules yet (internal/optin/modules has the others). The zero value is
// plain Deployment behaviour.
type Options struct {
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

// PodCount is a count of pods or a percentage of spec.replicas, as a
// partition and a canary step's size say it.
type PodCount struct {
	Value   int32
	Percent bool
}

// String is the annotation value c was parsed from (canonical form).
func (c PodCount) String() string {
	if c.Percent {
		return strconv.Itoa(int(c.Value)) + "%"
	}
	return strconv.Itoa(int(c.Value))
}

// Pods is how many pods c is out of replicas: a percentage rounded up (as
// StatefulSet and CloneSet round a partition), never more than replicas
// nor less than 0.
func (c PodCount) Pods(replicas int32) int32 {
	if replicas <= 0 {
		return 0
	}
	n := int64(c.Value)
	if c.Percent {
		n = (int64(c.Value)*int64(replicas) + 99) / 100
	}
	return int32(min(max(n, 0), int64(replicas)))
}

// ParsePodCount parses "<n>" with n from 0 to 2147483647, or "<p>%" with p
// from 0 to 100.
func ParsePodCount(v string) (PodCount, error) {
	const want = `must be a non-negative integer ("8") or a percentage from 0% to 100% ("80%")`
	s, percent := strings.CutSuffix(v, "%")
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 || s != strconv.FormatInt(n, 10) || percent && n > 100 {
		return PodCount{}, fmt.Errorf("%s", want)
	}
	return PodCount{Value: int32(min(n, math.MaxInt32)), Percent: percent}, nil
}

// Path is the field path of an annotation, as admission errors name it.
func Path(annotation string) *field.Path {
	return field.NewPath("metadata", "annotations").Key(annotation)
}

// ParseRest reads md's opt-in annotations that no module owns yet: call
// modules.Parse, which calls it after the modules. Each value that can
// never work is an error naming its annotation: an update-mode
// other than Recreate or InPlaceIfPossible, InPlaceIfPossible with strategy
// Recreate, canary steps that parseCanary refuses, an on-failure other
// than Continue or Abort, Abort with strategy Recreate, a retried-at that
// is not an RFC 3339 time, a drain other than SurgeFirst or with strategy
// Recreate, an analysis ParseAnalysis refuses or without canary steps,
// a rollout-on-config-change other than "true" or "false", an
// adopt-from other than Deployment/<name>, an adopt-revisions that is not a
// JSON object of hashes to revision names. The Options returned hold what
// could be parsed.
func ParseRest(md *appsv1beta1.MyDeployment) (Options, field.ErrorList) {
	var (
		o    Options
		errs field.ErrorList
	)
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

// Annotations are the opt-in annotations ParseRest reads, in the order
// their errors are reported (modules.Annotations has every opt-in's).
var Annotations = []string{appsv1beta1.UpdateModeAnnotation,
	appsv1beta1.CanaryStepsAnnotation, appsv1beta1.CanaryStepAnnotation, appsv1beta1.CanaryPromoteAnnotation,
	appsv1beta1.AnalysisAnnotation, appsv1beta1.OnFailureAnnotation, appsv1beta1.RetriedAtAnnotation, appsv1beta1.DrainAnnotation,
	appsv1beta1.RolloutOnConfigChangeAnnotation, appsv1beta1.AdoptFromAnnotation, appsv1beta1.AdoptRevisionsAnnotation}

func parseBool(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither true nor false", v)
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
