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
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rev returns a data-less revision named name with number n, created at
// second sec of the epoch.
func rev(name string, n int64, sec int64) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(sec, 0))},
		Revision:   n,
	}
}

// names returns the names of revs, in order.
func names(revs []*appsv1.ControllerRevision) []string {
	out := make([]string, 0, len(revs))
	for _, r := range revs {
		out = append(out, r.Name)
	}
	return out
}

func TestSort(t *testing.T) {
	tests := []struct {
		name string
		in   []*appsv1.ControllerRevision
		want []string
	}{
		{name: "empty", in: nil, want: []string{}},
		{name: "by revision", in: []*appsv1.ControllerRevision{rev("c", 3, 0), rev("a", 1, 0), rev("b", 2, 0)},
			want: []string{"a", "b", "c"}},
		{name: "ties by creation time", in: []*appsv1.ControllerRevision{rev("a", 1, 20), rev("b", 1, 10)},
			want: []string{"b", "a"}},
		{name: "ties by name", in: []*appsv1.ControllerRevision{rev("b", 1, 10), rev("a", 1, 10)},
			want: []string{"a", "b"}},
		{name: "mixed", in: []*appsv1.ControllerRevision{
			rev("z", 2, 5), rev("y", 1, 9), rev("x", 1, 9), rev("w", 1, 1), rev("v", 10, 0)},
			want: []string{"w", "x", "y", "z", "v"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			Sort(in)
			if got := names(in); !slices.Equal(got, tt.want) {
				t.Fatalf("Sort = %v, want %v", got, tt.want)
			}
			slices.Reverse(tt.in)
			Sort(tt.in)
			if got := names(tt.in); !slices.Equal(got, tt.want) {
				t.Fatalf("Sort depends on input order: %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNextRevision(t *testing.T) {
	tests := []struct {
		name string
		in   []*appsv1.ControllerRevision
		want int64
	}{
		{name: "none", in: nil, want: 1},
		{name: "one", in: []*appsv1.ControllerRevision{rev("a", 1, 0)}, want: 2},
		{name: "unsorted", in: []*appsv1.ControllerRevision{rev("a", 5, 0), rev("b", 9, 0), rev("c", 2, 0)}, want: 10},
		{name: "gaps after rollback", in: []*appsv1.ControllerRevision{rev("a", 4, 0), rev("b", 2, 0)}, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NextRevision(tt.in); got != tt.want {
				t.Fatalf("NextRevision = %d, want %d", got, tt.want)
			}
		})
	}
}
