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

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Live returns the names of the revisions that must never be deleted: current,
// update (either may be nil) and every revision a live pod runs (the values of
// the pods' [PodRevisionLabel]; empty names are ignored).
func Live(current, update *appsv1.ControllerRevision, podRevisions ...string) sets.Set[string] {
	live := sets.New[string]()
	for _, r := range []*appsv1.ControllerRevision{current, update} {
		if r != nil {
			live.Insert(r.Name)
		}
	}
	for _, name := range podRevisions {
		if name != "" {
			live.Insert(name)
		}
	}
	return live
}

// TruncateCandidates returns the revisions to delete so that at most limit
// revisions outside keep remain (StatefulSet's truncateHistory): the oldest of
// those not named in keep, oldest first (see [Sort]). A negative limit keeps
// all history; limit 0 deletes every revision not in keep.
//
// Promises: never returns a revision named in keep; does not reorder or modify
// revs; the result is a new slice of revs' pointers.
func TruncateCandidates(revs []*appsv1.ControllerRevision, keep sets.Set[string], limit int32) []*appsv1.ControllerRevision {
	if limit < 0 {
		return nil
	}
	history := make([]*appsv1.ControllerRevision, 0, len(revs))
	for _, r := range revs {
		if !keep.Has(r.Name) {
			history = append(history, r)
		}
	}
	if len(history) <= int(limit) {
		return nil
	}
	slices.SortStableFunc(history, compare)
	return history[:len(history)-int(limit)]
}
