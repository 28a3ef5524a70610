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
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
)

// Sync finds or records the revision of owner's template and returns the
// current and update revisions (StatefulSet's getStatefulSetRevisions).
// revisions must be owner's existing revisions (as [Store.List] returns them,
// any order); currentRevisionName is the status' currentRevision.
//
// The update revision is:
//   - the newest revision, if it equals (see [Equal]) the template: no write;
//   - else the newest older revision equal to the template, renumbered to
//     [NextRevision] (a rollback: no new revision is created);
//   - else a new revision numbered [NextRevision], created by [Store.Create].
//
// The current revision is the one named currentRevisionName if it is among
// revisions (the renumbered object if it is the update revision), else the
// update revision (a new history starts there).
//
// newCollisionCount is collisionCount plus the name collisions met; it is
// returned, and must be persisted, even when err is non-nil. Errors wrap
// [ErrInvalidOwner] for an owner that cannot be recorded (see [New]), or the
// API errors of [Store.Renumber] and [Store.Create]. The returned objects may
// be elements of revisions; revisions itself is not reordered or modified.
func (s *Store) Sync(ctx context.Context, owner Owner, revisions []*appsv1.ControllerRevision,
	currentRevisionName string, collisionCount int32) (current, update *appsv1.ControllerRevision,
	newCollisionCount int32, err error) {
	sorted := slices.Clone(revisions)
	Sort(sorted)
	newCollisionCount = collisionCount

	candidate, err := New(owner, NextRevision(sorted), newCollisionCount)
	if err != nil {
		return nil, nil, newCollisionCount, err
	}
	newest := len(sorted) - 1
	equal := lastEqual(sorted, candidate)
	switch {
	case equal == newest && newest >= 0:
		update = sorted[newest]
	case equal >= 0:
		update, err = s.Renumber(ctx, sorted[equal], candidate.Revision)
	default:
		update, err = s.Create(ctx, candidate, &newCollisionCount)
	}
	if err != nil {
		return nil, nil, newCollisionCount, err
	}

	current = update
	if i := slices.IndexFunc(sorted, func(r *appsv1.ControllerRevision) bool {
		return r.Name == currentRevisionName
	}); i >= 0 && sorted[i].Name != update.Name {
		current = sorted[i]
	}
	return current, update, newCollisionCount, nil
}

// lastEqual returns the index of the last of sorted equal to rev, or -1.
func lastEqual(sorted []*appsv1.ControllerRevision, rev *appsv1.ControllerRevision) int {
	for i := len(sorted) - 1; i >= 0; i-- {
		if Equal(sorted[i], rev) {
			return i
		}
	}
	return -1
}
