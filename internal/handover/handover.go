// Package handover decides how the pods of a Deployment change hands with
// no pod restarted: to a MyDeployment that names the Deployment in
// apps.mydeployment.io/adopt-from (which ReplicaSets are the Deployment's,
// what the MyDeployment waits for, which ReplicaSets' revisions to record,
// which orphans to adopt into which revision, when it is done), and back
// (the ReplicaSet and the Deployment that take a MyDeployment's pods over,
// as `kubectl mydeployment eject` makes them). It reads and writes
// nothing: the controller and the plugin do, by these rules, so that both
// judge a hand-over alike (docs/migrate.md).
//
// What it relies on of kube-controller-manager (pkg/controller/deployment
// and replicaset, v1.37): a ReplicaSet being deleted manages no pod; a
// ReplicaSet adopts the orphans its selector matches; a Deployment adopts
// the orphan ReplicaSets its selector matches and takes the oldest whose
// template equals its own ignoring pod-template-hash as its new one
// (FindNewReplicaSet, EqualIgnoreHash), whatever that hash is; a paused
// Deployment creates no ReplicaSet.
package handover

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Input is what one sync of a MyDeployment taking over a Deployment's
// pods sees, everything but the cache read from the API server.
type Input struct {
	// Name is the Deployment adopt-from names, and Deployment that object,
	// nil when it does not exist.
	Name       string
	Deployment *appsv1.Deployment
	// Owner is the MyDeployment's UID, Selector its selector (also as
	// LabelSelector, to compare with the Deployment's) and Template its
	// pod template.
	Owner         types.UID
	Selector      labels.Selector
	LabelSelector *metav1.LabelSelector
	Template      *corev1.PodTemplateSpec
	// ReplicaSets are the namespace's ReplicaSets whose labels Selector
	// matches (a Deployment's carry its template's), Pods the pods it
	// matches.
	ReplicaSets []*appsv1.ReplicaSet
	Pods        []*corev1.Pod
	// Recorded is AdoptRevisionsAnnotation: a ReplicaSet's
	// pod-template-hash to the name of the revision its pods become; nil
	// when the Deployment was never seen.
	Recorded map[string]string
	// Cached reports whether the MyDeployment's pod cache lists the pod of
	// that UID as its own.
	Cached func(types.UID) bool
}

// Decision is what a sync does about an Input. At most one of Record and
// Adopt is non-empty: pods are adopted only once nothing waits, and then
// the Deployment's ReplicaSets are gone.
type Decision struct {
	// Wait says why no pod may be adopted yet: the Deployment, one of its
	// ReplicaSets, or a pod one of them controls; "" when nothing holds the
	// hand-over back.
	Wait string
	// Blocked says why the hand-over cannot go on without a user's change
	// (a Deployment never seen, a selector not the MyDeployment's); ""
	// when it can.
	Blocked string
	// Record are the Deployment's ReplicaSets with pods whose
	// pod-template-hash is not in Recorded yet: their templates must be
	// recorded as revisions while they exist.
	Record []*appsv1.ReplicaSet
	// Adopt are the live orphans the selector matches whose
	// pod-template-hash is recorded: each is adopted into the revision
	// Recorded names for its hash.
	Adopt []*corev1.Pod
	// Done: the Deployment was seen, nothing waits or is left to adopt, and
	// the cache lists every live pod the MyDeployment controls: the
	// annotations can go, and the controller plan from its cache.
	Done bool
	// Owned counts the live pods the MyDeployment controls.
	Owned int
}

// Decide is the next step of a hand-over.
func Decide(in Input) Decision {
	var d Decision
	seen := in.Recorded != nil || in.Deployment != nil
	if dep := in.Deployment; dep != nil {
		d.Wait = fmt.Sprintf("Deployment %s still exists: waiting for it and its ReplicaSets to be deleted with "+
			"--cascade=orphan (kubectl mydeployment migrate deployment/%s does it)", in.Name, in.Name)
		if !apiequality.Semantic.DeepEqual(dep.Spec.Selector, in.LabelSelector) {
			d.Blocked = fmt.Sprintf("Deployment %s selects %s, not this MyDeployment's selector: only a Deployment "+
				"with the same selector can hand its pods over", in.Name, metav1.FormatLabelSelector(dep.Spec.Selector))
		}
	}
	for _, rs := range in.ReplicaSets {
		if !IsReplicaSetOf(in.Name, rs) {
			continue
		}
		seen = true
		if d.Wait == "" {
			d.Wait = fmt.Sprintf("ReplicaSet %s of Deployment %s still exists: waiting for it to be deleted with --cascade=orphan",
				rs.Name, in.Name)
		}
		if _, ok := in.Recorded[rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]]; !ok && hasPods(rs, in.Pods) {
			d.Record = append(d.Record, rs)
		}
	}
	var uncached []string
	for _, pod := range in.Pods {
		if pod.DeletionTimestamp != nil || !in.Selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		switch ref := metav1.GetControllerOfNoCopy(pod); {
		case ref != nil && ref.UID == in.Owner:
			d.Owned++
			if in.Cached != nil && !in.Cached(pod.UID) {
				uncached = append(uncached, pod.Name)
			}
		case ref != nil && isReplicaSetPodOf(in.Name, ref, pod) && d.Wait == "":
			d.Wait = fmt.Sprintf("pod %s is still controlled by ReplicaSet %s of Deployment %s", pod.Name, ref.Name, in.Name)
		}
	}
	if !seen {
		d.Blocked = fmt.Sprintf("Deployment %s does not exist and was never seen: there is nothing to take over; "+
			"remove the annotation %s for the MyDeployment to create its pods", in.Name, appsv1beta1.AdoptFromAnnotation)
	}
	if d.Wait != "" || d.Blocked != "" {
		return d
	}
	for _, pod := range in.Pods {
		if _, ok := in.Recorded[pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]]; ok && pod.DeletionTimestamp == nil &&
			metav1.GetControllerOfNoCopy(pod) == nil && in.Selector.Matches(labels.Set(pod.Labels)) {
			d.Adopt = append(d.Adopt, pod)
		}
	}
	if len(uncached) > 0 {
		d.Wait = fmt.Sprintf("waiting for the manager's cache to list the adopted pods %s", strings.Join(uncached, ", "))
	}
	d.Done = len(d.Adopt) == 0 && len(uncached) == 0
	return d
}

// IsReplicaSetOf reports whether rs is one of Deployment name's
// ReplicaSets: controlled by a Deployment of that name, or (once the
// Deployment was deleted with --cascade=orphan) controlled by nothing and
// named as the Deployment controller names them, <name>-<pod-template-hash>.
func IsReplicaSetOf(name string, rs *appsv1.ReplicaSet) bool {
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		return ref.Kind == "Deployment" && strings.HasPrefix(ref.APIVersion, appsv1.GroupName+"/") && ref.Name == name
	}
	hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	return hash != "" && rs.Name == ReplicaSetName(name, hash)
}

// isReplicaSetPodOf reports whether ref, pod's controller, is a ReplicaSet
// of Deployment name: the one the Deployment controller names after the
// pod's pod-template-hash.
func isReplicaSetPodOf(name string, ref *metav1.OwnerReference, pod *corev1.Pod) bool {
	hash := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	return ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.APIVersion, appsv1.GroupName+"/") &&
		hash != "" && ref.Name == ReplicaSetName(name, hash)
}

// ReplicaSetName is the name the Deployment controller gives Deployment
// name's ReplicaSet of pod-template-hash hash (generateReplicaSetName).
func ReplicaSetName(name, hash string) string {
	if limit := validation.DNS1123SubdomainMaxLength - 1 - len(hash); len(name) > limit && limit > 0 {
		name = name[:limit]
	}
	return name + "-" + hash
}

// hasPods reports whether rs wants or has pods, or controls one of pods.
func hasPods(rs *appsv1.ReplicaSet, pods []*corev1.Pod) bool {
	if (rs.Spec.Replicas == nil || *rs.Spec.Replicas > 0) || rs.Status.Replicas > 0 {
		return true
	}
	return slices.ContainsFunc(pods, func(p *corev1.Pod) bool {
		ref := metav1.GetControllerOfNoCopy(p)
		return ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil
	})
}

// EqualIgnoreHash reports whether two pod templates are equal but for
// their pod-template-hash label, as the Deployment controller compares a
// ReplicaSet's template with its own.
func EqualIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	return apiequality.Semantic.DeepEqual(WithoutHash(a), WithoutHash(b))
}

// WithoutHash is a copy of t without the pod-template-hash label.
func WithoutHash(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	out := t.DeepCopy()
	delete(out.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	if len(out.Labels) == 0 {
		out.Labels = nil
	}
	return out
}

// PodsPerRevision counts the live pods of in by the revision they are or
// become: a pod the MyDeployment controls by its revision label, a pod of
// the Deployment or an orphan by the revision recorded for its
// pod-template-hash.
func PodsPerRevision(in Input) map[string]int {
	counts := map[string]int{}
	for _, pod := range in.Pods {
		if pod.DeletionTimestamp != nil || !in.Selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(pod)
		switch rev, recorded := in.Recorded[pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]]; {
		case ref != nil && ref.UID == in.Owner:
			counts[pod.Labels[appsv1beta1.RevisionLabel]]++
		case recorded && (ref == nil || isReplicaSetPodOf(in.Name, ref, pod)):
			counts[rev]++
		}
	}
	return counts
}
