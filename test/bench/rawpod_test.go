package main

import (
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// TestRawPodIsAControllersPod checks that the raw party's pod has the shape
// of the pod our controller creates for the same object (the pod the API
// server, etcd and the garbage collector then handle): generateName, the
// same label keys, one owner reference that is the controller and blocks
// owner deletion. The plain pod of raw_plain has none of that.
func TestRawPodIsAControllersPod(t *testing.T) {
	const ns, name = "bench", "raw-000"
	tmpl := podTemplate(name, imageV1, "")
	md := &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("md-uid")},
		Spec: appsv1beta1.MyDeploymentSpec{Replicas: ptr.To[int32](4), Template: tmpl,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
	}
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name + "-6b8d9f7c5",
		Labels: map[string]string{revision.HashLabel: "6b8d9f7c5"}}}
	want := podcontrol.NewPod(md, &tmpl, rev)

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("cm-uid")}}
	got := rawPod(ns, name, 0, imageV1, "", owner)

	if got.Name != "" || got.GenerateName != want.GenerateName {
		t.Errorf("name %q, generateName %q; want generateName %q as the controller's", got.Name, got.GenerateName, want.GenerateName)
	}
	if g, w := slices.Sorted(maps.Keys(got.Labels)), slices.Sorted(maps.Keys(want.Labels)); !slices.Equal(g, w) {
		t.Errorf("label keys %v, want the controller's %v", g, w)
	}
	if h := got.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; len(h) < 8 ||
		got.Labels[appsv1.ControllerRevisionHashLabelKey] != name+"-"+h {
		t.Errorf("revision labels %v: want a hash and <object>-<hash>", got.Labels)
	}
	if len(got.OwnerReferences) != 1 {
		t.Fatalf("owner references %v, want one", got.OwnerReferences)
	}
	ref, wref := got.OwnerReferences[0], want.OwnerReferences[0]
	if ref.UID != owner.UID || ref.Kind != "ConfigMap" || ref.APIVersion != "v1" ||
		!ptr.Deref(ref.Controller, false) || !ptr.Equal(ref.BlockOwnerDeletion, wref.BlockOwnerDeletion) {
		t.Errorf("owner reference %+v, want the ConfigMap as controller, blockOwnerDeletion as the controller's %+v", ref, wref)
	}
	if !equalSpec(got.Spec, want.Spec) {
		t.Errorf("spec %+v, want the template's %+v", got.Spec, want.Spec)
	}

	if got.Spec.NodeName != "" {
		t.Errorf("unbound pod names node %q", got.Spec.NodeName)
	}
	if bound := rawPod(ns, name, 1, imageV1, "node-3", owner); bound.Spec.NodeName != "node-3" {
		t.Errorf("bound pod: nodeName %q, want node-3", bound.Spec.NodeName)
	}

	plain := rawPod(ns, name, 3, imageV1, "", nil)
	if plain.Name != name+"-3" || len(plain.OwnerReferences) != 0 || len(plain.Labels) != len(tmpl.Labels) {
		t.Errorf("plain pod %s: labels %v, owners %v; want %s-3, the template's labels only, no owner",
			plain.Name, plain.Labels, plain.OwnerReferences, name)
	}
}

func equalSpec(a, b corev1.PodSpec) bool {
	return len(a.Containers) == len(b.Containers) && a.Containers[0].Image == b.Containers[0].Image &&
		a.Containers[0].Name == b.Containers[0].Name
}
