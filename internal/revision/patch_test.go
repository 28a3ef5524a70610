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
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// webTemplate is the small template whose revision data is pinned in goldenData.
func webTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
}

// goldenData is what StatefulSet's getPatch produces for webTemplate.
const goldenData = `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},` +
	`"spec":{"containers":[{"image":"nginx:1.27","name":"web","resources":{}}]}}}}`

func TestPatchGolden(t *testing.T) {
	got, err := Patch(webTemplate())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != goldenData {
		t.Fatalf("Patch changed format:\n got %s\nwant %s", got, goldenData)
	}
}

func TestPatchRoundTrip(t *testing.T) {
	full := webTemplate()
	full.Annotations = map[string]string{"a": "<&>", "unicode": "héllo ✓"}
	full.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1500m"),
		corev1.ResourceMemory: resource.MustParse("1Gi"),
	}
	full.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", Value: ""}}
	full.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	full.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}

	huge := webTemplate()
	huge.Spec.ActiveDeadlineSeconds = ptr.To[int64](1<<62 + 1) // beyond float64's exact range

	tests := []struct {
		name     string
		template *corev1.PodTemplateSpec
	}{
		{name: "empty", template: &corev1.PodTemplateSpec{}},
		{name: "small", template: webTemplate()},
		{name: "quantities, pointers, html and unicode", template: full},
		{name: "int64 beyond 2^53", template: huge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := Patch(tt.template)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Template(&appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: data}})
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.template) {
				t.Fatalf("round trip changed the template:\n got %#v\nwant %#v", got, tt.template)
			}
			again, err := Patch(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(data) {
				t.Fatalf("Patch(Template(data)) != data:\n got %s\nwant %s", again, data)
			}
		})
	}
}

func TestTemplateFromObject(t *testing.T) {
	rev := &appsv1.ControllerRevision{Data: runtime.RawExtension{Object: &runtime.Unknown{
		Raw: []byte(goldenData), ContentType: runtime.ContentTypeJSON,
	}}}
	got, err := Template(rev)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(got, webTemplate()) {
		t.Fatalf("got %#v", got)
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		name string
		rev  *appsv1.ControllerRevision
	}{
		{name: "nil revision", rev: nil},
		{name: "empty data", rev: &appsv1.ControllerRevision{}},
		{name: "not JSON", rev: withRaw("{")},
		{name: "no spec", rev: withRaw(`{"template":{}}`)},
		{name: "no template", rev: withRaw(`{"spec":{"replicas":1}}`)},
		{name: "null template", rev: withRaw(`{"spec":{"template":null}}`)},
		{name: "template not an object", rev: withRaw(`{"spec":{"template":3}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Template(tt.rev); !errors.Is(err, ErrInvalidData) {
				t.Fatalf("want ErrInvalidData, got %v", err)
			}
		})
	}
}

func TestPatchNil(t *testing.T) {
	if _, err := Patch(nil); err == nil {
		t.Fatal("want error for nil template")
	}
}

// withRaw returns a revision holding raw as data.
func withRaw(raw string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(raw)}}
}
