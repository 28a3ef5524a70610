/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package revision

import (
	"bytes"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// ownerGVK stands in for MyDeployment's kind; this package must not import it.
var ownerGVK = schema.GroupVersionKind{Group: "apps.mydeployment.io", Version: "v1beta1", Kind: "MyDeployment"}

// testOwner returns an owner "web" in "ns" selecting app=web, with template.
func testOwner(template *corev1.PodTemplateSpec) Owner {
	return Owner{
		Object:   &metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: types.UID("uid-web")},
		GVK:      ownerGVK,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: template,
	}
}

func TestNew(t *testing.T) {
	tmpl := webTemplate()
	tmpl.Labels["tier"] = "frontend" // not in the selector: must not be copied
	tmpl.Labels["track"] = "stable"
	owner := testOwner(tmpl)
	owner.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{
		{Key: "track", Operator: metav1.LabelSelectorOpIn, Values: []string{"stable", "canary"}},
	}

	rev, err := New(owner, 7, 2)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := Patch(tmpl)
	hash := Hash(data, ptr.To[int32](2))

	if rev.Name != "web-"+hash || rev.Namespace != "ns" || rev.Revision != 7 {
		t.Errorf("name/namespace/revision = %s/%s/%d", rev.Namespace, rev.Name, rev.Revision)
	}
	if string(rev.Data.Raw) != string(data) {
		t.Errorf("data = %s, want %s", rev.Data.Raw, data)
	}
	wantLabels := map[string]string{"app": "web", "track": "stable", HashLabel: hash}
	if len(rev.Labels) != len(wantLabels) {
		t.Errorf("labels = %v, want %v", rev.Labels, wantLabels)
	}
	for k, v := range wantLabels {
		if rev.Labels[k] != v {
			t.Errorf("labels = %v, want %v", rev.Labels, wantLabels)
		}
	}
	if len(rev.OwnerReferences) != 1 {
		t.Fatalf("ownerReferences = %v", rev.OwnerReferences)
	}
	ref := rev.OwnerReferences[0]
	if !ptr.Deref(ref.Controller, false) || !ptr.Deref(ref.BlockOwnerDeletion, false) ||
		ref.UID != "uid-web" || ref.Name != "web" ||
		ref.Kind != "MyDeployment" || ref.APIVersion != "apps.mydeployment.io/v1beta1" {
		t.Errorf("ownerReference = %+v", ref)
	}

	tmpl.Labels["app"] = "mutated"
	if rev.Labels["app"] != "web" {
		t.Error("New shares the template's label map")
	}
	// Collision count 0 still enters the hash, exactly as Store.Create names revisions.
	plain, _ := New(testOwner(webTemplate()), 1, 0)
	if want := Hash([]byte(goldenData), ptr.To[int32](0)); plain.Labels[HashLabel] != want || plain.Name != "web-"+want {
		t.Errorf("collisionCount 0: name %q, hash label %q, want hash %q", plain.Name, plain.Labels[HashLabel], want)
	}
}

func TestNewInvalidOwner(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Owner)
	}{
		{name: "nil object", mutate: func(o *Owner) { o.Object = nil }},
		{name: "nil template", mutate: func(o *Owner) { o.Template = nil }},
		{name: "nil selector", mutate: func(o *Owner) { o.Selector = nil }},
		{name: "invalid selector", mutate: func(o *Owner) {
			o.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}
		}},
		{name: "template not selected", mutate: func(o *Owner) { o.Template.Labels = map[string]string{"app": "db"} }},
		{name: "template without labels", mutate: func(o *Owner) { o.Template.Labels = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := testOwner(webTemplate())
			tt.mutate(&owner)
			if _, err := New(owner, 1, 0); !errors.Is(err, ErrInvalidOwner) {
				t.Fatalf("want ErrInvalidOwner, got %v", err)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	golden := withRaw(goldenData)
	// Same template, keys in another order and spaced: not byte-equal.
	reordered := withRaw(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]},` +
		` "metadata":{"labels":{"app":"web"},"annotations":{}},"$patch":"replace"}}}`)
	other := webTemplate()
	other.Spec.Containers[0].Image = "nginx:1.28"
	otherData, _ := Patch(other)

	tests := []struct {
		name string
		a, b *appsv1.ControllerRevision
		want bool
	}{
		{name: "both nil", want: true},
		{name: "one nil", a: golden, want: false},
		{name: "same bytes", a: golden, b: withRaw(goldenData), want: true},
		{name: "same template, other bytes", a: golden, b: reordered, want: true},
		{name: "from Object", a: golden, b: &appsv1.ControllerRevision{Data: runtime.RawExtension{
			Object: &runtime.Unknown{Raw: []byte(goldenData), ContentType: runtime.ContentTypeJSON}}}, want: true},
		{name: "other template", a: golden, b: withRaw(string(otherData)), want: false},
		{name: "both empty", a: &appsv1.ControllerRevision{}, b: &appsv1.ControllerRevision{}, want: true},
		{name: "empty vs template", a: &appsv1.ControllerRevision{}, b: golden, want: false},
		{name: "garbage vs template", a: withRaw("{"), b: golden, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Equal(tt.a, tt.b); got != tt.want {
				t.Fatalf("Equal = %v, want %v", got, tt.want)
			}
			if got := Equal(tt.b, tt.a); got != tt.want {
				t.Fatalf("Equal not symmetric")
			}
		})
	}
}

// New records Owner.Data when it is given (the controller's per-generation copy), and
// names the revision by it: the data is the revision's identity.
func TestNewUsesPrecomputedData(t *testing.T) {
	computed := mustNew(t, testOwner(templateWithImage("v1")), 1)
	given := testOwner(templateWithImage("v1"))
	given.Data = computed.Data.Raw
	fromData := mustNew(t, given, 1)
	if fromData.Name != computed.Name || !bytes.Equal(fromData.Data.Raw, computed.Data.Raw) {
		t.Errorf("with Data: %s %s, want %s %s", fromData.Name, fromData.Data.Raw, computed.Name, computed.Data.Raw)
	}
	other, err := Patch(templateWithImage("v2"))
	if err != nil {
		t.Fatal(err)
	}
	given.Data = other
	if rev := mustNew(t, given, 1); rev.Name == computed.Name || !bytes.Equal(rev.Data.Raw, other) {
		t.Errorf("New ignored Owner.Data: %s %s", rev.Name, rev.Data.Raw)
	}
}

// Owner.Data is shared by every sync of its owner (the controller keeps it per generation): New must not
// hand it out as the revision's own bytes.
func TestNewCopiesData(t *testing.T) {
	data, err := Patch(templateWithImage("v1"))
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(data)
	owner := testOwner(templateWithImage("v1"))
	owner.Data = data
	rev := mustNew(t, owner, 1)
	rev.Data.Raw[0] = 'X'
	if !bytes.Equal(data, want) {
		t.Fatalf("writing the revision's data changed the owner's: %s", data)
	}
}
