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
	d, err := Decide(owner, revisions, currentRevisionName, collisionCount)
	if err != nil {
		return nil, nil, collisionCount, err
	}
	newCollisionCount = collisionCount
	if update, err = s.Apply(ctx, d, &newCollisionCount); err != nil {
		return nil, nil, newCollisionCount, err
	}
	current = d.Current
	if current.Name == update.Name {
		current = update
	}
	return current, update, newCollisionCount, nil
}

// Decision is what [Store.Sync] writes for an owner's template, decided
// from the revisions alone (see Sync for the rules).
type Decision struct {
	// Update is the update revision as it will be once written: the newest
	// revision (no write), an older equal one renumbered (Renumber), or a
	// new one (Create), named as [Store.Create] first tries to name it.
	Update *appsv1.ControllerRevision
	// Current is the current revision (Update's object when it is Update).
	Current *appsv1.ControllerRevision
	// Renumber says Update is source with a new number; Create that it is new.
	Renumber, Create bool
	source           *appsv1.ControllerRevision
}

// Decide is the decision of [Store.Sync], with no write.
func Decide(owner Owner, revisions []*appsv1.ControllerRevision, currentRevisionName string,
	collisionCount int32) (Decision, error) {
	sorted := slices.Clone(revisions)
	Sort(sorted)
	candidate, err := New(owner, NextRevision(sorted), collisionCount)
	if err != nil {
		return Decision{}, err
	}
	var d Decision
	newest := len(sorted) - 1
	switch equal := lastEqual(sorted, candidate); {
	case equal == newest && newest >= 0:
		d.Update = sorted[newest]
	case equal >= 0:
		d.Renumber, d.source = true, sorted[equal]
		d.Update = sorted[equal].DeepCopy()
		d.Update.Revision = candidate.Revision
	default:
		d.Create, d.Update = true, candidate
	}
	d.Current = d.Update
	if i := slices.IndexFunc(sorted, func(r *appsv1.ControllerRevision) bool {
		return r.Name == currentRevisionName
	}); i >= 0 && sorted[i].Name != d.Update.Name {
		d.Current = sorted[i]
	}
	return d, nil
}

// Apply makes d's write, if any, and returns the update revision as
// written: for a Create whose name was taken, under another name and with
// *collisionCount raised (see [Store.Create]).
func (s *Store) Apply(ctx context.Context, d Decision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	switch {
	case d.Renumber:
		return s.Renumber(ctx, d.source, d.Update.Revision)
	case d.Create:
		return s.Create(ctx, d.Update, collisionCount)
	}
	return d.Update, nil
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
