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
	"strings"
	"testing"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// safeAlphabet is what rand.SafeEncodeString emits.
const safeAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func FuzzHash(f *testing.F) {
	f.Add([]byte(goldenData), int32(0), false)
	f.Add([]byte{}, int32(0), true)
	f.Add([]byte("abc"), int32(-1), true)
	f.Add([]byte{0xff, 0x00, 0xfe}, int32(2147483647), true)
	f.Fuzz(func(t *testing.T, data []byte, collisionCount int32, withCount bool) {
		var cc *int32
		if withCount {
			cc = &collisionCount
		}
		h := Hash(data, cc)
		if h != Hash(data, cc) {
			t.Fatal("Hash is not deterministic")
		}
		if h == "" || len(h) > 10 || strings.Trim(h, safeAlphabet) != "" {
			t.Fatalf("Hash = %q outside the safe alphabet or too long", h)
		}
		name := Name(strings.Repeat("p", 1+int(uint8(collisionCount))), h)
		if errs := append(validation.IsValidLabelValue(name), validation.IsDNS1123Subdomain(name)...); len(errs) > 0 {
			t.Fatalf("Name = %q: %v", name, errs)
		}
	})
}

func FuzzPatchRoundTrip(f *testing.F) {
	f.Add("web", "nginx:1.27", "app", "web", "<&> ✓", int64(30))
	f.Add("", "", "", "", "", int64(0))
	f.Add("c", "img", "example.com/key", "v", "\u2028\"\\", int64(-1))
	f.Add("big", "i", "k", "v", "a", int64(1<<62+1))
	f.Fuzz(func(t *testing.T, name, image, labelKey, labelValue, annotation string, deadline int64) {
		for _, s := range []string{name, image, labelKey, labelValue, annotation} {
			if !utf8.ValidString(s) {
				t.Skip("JSON cannot carry invalid UTF-8; API strings are UTF-8")
			}
		}
		tmpl := &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{
				Labels:      map[string]string{labelKey: labelValue},
				Annotations: map[string]string{"note": annotation},
			},
			Spec: corev1.PodSpec{
				Containers:            []corev1.Container{{Name: name, Image: image, Args: []string{annotation}}},
				ActiveDeadlineSeconds: &deadline,
			},
		}
		data, err := Patch(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		stored := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: data}}
		got, err := Template(stored)
		if err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(got, tmpl) {
			t.Fatalf("round trip changed the template:\n got %#v\nwant %#v", got, tmpl)
		}
		again, err := Patch(got)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(data) {
			t.Fatalf("Patch(Template(data)) != data:\n got %s\nwant %s", again, data)
		}
		if !Equal(stored, &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: again}}) {
			t.Fatal("Equal denies equal data")
		}
	})
}
