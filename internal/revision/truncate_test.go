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

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestLive(t *testing.T) {
	got := Live(rev("cur", 1, 0), nil, "p1", "", "cur", "p2")
	if want := sets.New("cur", "p1", "p2"); !got.Equal(want) {
		t.Fatalf("Live = %v, want %v", sets.List(got), sets.List(want))
	}
	if got := Live(nil, nil); got.Len() != 0 {
		t.Fatalf("Live(nil, nil) = %v", sets.List(got))
	}
}

func TestTruncateCandidates(t *testing.T) {
	// r1..r6, oldest first, given shuffled to show the result does not depend on order.
	history := []*appsv1.ControllerRevision{
		rev("r4", 4, 0), rev("r1", 1, 0), rev("r6", 6, 0), rev("r3", 3, 0), rev("r5", 5, 0), rev("r2", 2, 0),
	}
	current, update := "r5", "r6"

	tests := []struct {
		name  string
		keep  sets.Set[string]
		limit int32
		want  []string
	}{
		{name: "negative limit keeps all", keep: Live(nil, nil, current, update), limit: -1, want: nil},
		{name: "limit larger than history", keep: Live(nil, nil, current, update), limit: 10, want: nil},
		{name: "limit equal to history", keep: Live(nil, nil, current, update), limit: 4, want: nil},
		{name: "limit 2 deletes oldest first", keep: Live(nil, nil, current, update), limit: 2,
			want: []string{"r1", "r2"}},
		{name: "limit 0 deletes all but live", keep: Live(nil, nil, current, update), limit: 0,
			want: []string{"r1", "r2", "r3", "r4"}},
		{name: "live pods on old revisions", keep: Live(nil, nil, current, update, "r1", "r3"), limit: 0,
			want: []string{"r2", "r4"}},
		{name: "live pods on old revisions, limit 1", keep: Live(nil, nil, current, update, "r1", "r3"), limit: 1,
			want: []string{"r2"}},
		{name: "current equals update", keep: Live(nil, nil, update), limit: 1,
			want: []string{"r1", "r2", "r3", "r4"}},
		{name: "nil keep", keep: nil, limit: 3, want: []string{"r1", "r2", "r3"}},
		{name: "everything live", keep: sets.New("r1", "r2", "r3", "r4", "r5", "r6"), limit: 0, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(history)
			got := TruncateCandidates(in, tt.keep, tt.limit)
			if !slices.Equal(names(got), tt.want) && (len(got) != 0 || len(tt.want) != 0) {
				t.Fatalf("TruncateCandidates = %v, want %v", names(got), tt.want)
			}
			if !slices.Equal(in, history) {
				t.Fatal("TruncateCandidates reordered its input")
			}
		})
	}
	if got := TruncateCandidates(nil, nil, 0); len(got) != 0 {
		t.Fatalf("no history: %v", names(got))
	}
}
