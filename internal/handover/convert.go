package handover

import (
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// Annotations the Deployment controller writes on a Deployment, and the
// revision it reads from a ReplicaSet.
const (
	deploymentAnnotations = "deployment.kubernetes.io/"
	// DeploymentRevisionAnnotation is a Deployment's and its ReplicaSets'
	// revision number.
	DeploymentRevisionAnnotation = deploymentAnnotations + "revision"
	lastApplied                  = corev1.LastAppliedConfigAnnotation
	ourAnnotations               = "apps.mydeployment.io/"
)

// FromDeployment is the MyDeployment that takes over d's pods: d's name,
// namespace and labels, its annotations but the Deployment controller's
// and kubectl's last-applied, its spec field for field, and adopt-from
// naming d.
func FromDeployment(d *appsv1.Deployment) *appsv1beta1.MyDeployment {
	annotations := copyWithout(d.Annotations, deploymentAnnotations)
	annotations[appsv1beta1.AdoptFromAnnotation] = optin.AdoptFrom(d.Name)
	s := d.Spec.DeepCopy()
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, Labels: maps.Clone(d.Labels),
			Annotations: annotations},
		Spec: appsv1beta1.MyDeploymentSpec{
			Replicas: s.Replicas, Selector: s.Selector, Template: s.Template,
			RolloutSpec: appsv1beta1.RolloutSpec{Strategy: s.Strategy, MinReadySeconds: s.MinReadySeconds,
				RevisionHistoryLimit: s.RevisionHistoryLimit, Paused: s.Paused, ProgressDeadlineSeconds: s.ProgressDeadlineSeconds},
		},
	}
}

// ReplicaSetFor is the ReplicaSet that takes over md's pods of the
// revision whose hash (their pod-template-hash) is hash: named as the
// Deployment controller would name it, <md>-<hash>; md's selector and
// template, each with pod-template-hash hash; replicas pods; md's
// minReadySeconds and revision number. It has no owner: the Deployment
// adopts it.
func ReplicaSetFor(md *appsv1beta1.MyDeployment, hash string, replicas int32) *appsv1.ReplicaSet {
	template := md.Spec.Template.DeepCopy()
	template.Labels = maps.Clone(template.Labels)
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	selector := md.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: ReplicaSetName(md.Name, hash), Namespace: md.Namespace,
			Labels: maps.Clone(template.Labels)},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), MinReadySeconds: md.Spec.MinReadySeconds,
			Selector: selector, Template: *template},
	}
	if n := optin.RecordsOf(md).RevisionText; n != "" {
		rs.Annotations = map[string]string{DeploymentRevisionAnnotation: n}
	}
	return rs
}

// DeploymentFor is the Deployment that takes over md's ReplicaSet: md's
// name, namespace and labels, its annotations but ours and kubectl's
// last-applied, its spec field for field with replicas pods, paused (it
// creates no ReplicaSet while paused; the plugin sets md's paused once
// the Deployment owns the ReplicaSet).
func DeploymentFor(md *appsv1beta1.MyDeployment, replicas int32) *appsv1.Deployment {
	s := md.Spec.DeepCopy()
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: md.Name, Namespace: md.Namespace, Labels: maps.Clone(md.Labels),
			Annotations: copyWithout(md.Annotations, ourAnnotations)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas), Selector: s.Selector, Template: s.Template, Strategy: s.Strategy,
			MinReadySeconds: s.MinReadySeconds, RevisionHistoryLimit: s.RevisionHistoryLimit, Paused: true,
			ProgressDeadlineSeconds: s.ProgressDeadlineSeconds,
		},
	}
}

// copyWithout is m without kubectl's last-applied annotation and the keys
// starting with prefix; never nil.
func copyWithout(m map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if k != lastApplied && !strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}
