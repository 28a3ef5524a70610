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
	"cmp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
)

// Sort orders revs in place, oldest first: by Revision, then creation time,
// then name (history.SortControllerRevisions). The sort is stable and total for
// distinct names, so its result does not depend on the input order.
func Sort(revs []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revs, compare)
}

// compare orders a before b when a is older (see [Sort]).
func compare(a, b *appsv1.ControllerRevision) int {
	if c := cmp.Compare(a.Revision, b.Revision); c != 0 {
		return c
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// NextRevision returns the number for a new revision: one more than the
// largest Revision in revs, or 1 when revs is empty. revs need not be sorted.
func NextRevision(revs []*appsv1.ControllerRevision) int64 {
	var highest int64
	for _, r := range revs {
		highest = max(highest, r.Revision)
	}
	return highest + 1
}
