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

// Package revision records the pod template versions of a MyDeployment in
// apps/v1 ControllerRevisions, with StatefulSet's semantics.
//
// It is our own rewrite of kubernetes pkg/controller/history and of the
// revision parts of pkg/controller/statefulset (getPatch, newRevision,
// ApplyRevision, getStatefulSetRevisions, truncateHistory); it does not import
// k8s.io/kubernetes and does not know our API types: the owner is described by
// an [Owner].
//
// The pure functions ([Patch], [Template], [Hash], [Name], [New], [Equal],
// [Sort], [NextRevision], [TruncateCandidates], [Live]) never touch the API.
// [Store] is the only part that reads or writes ControllerRevisions.
//
// A controller typically does, on every reconcile:
//
//	revs, _ := store.List(ctx, ns, selector, owner.UID)
//	current, update, cc, err := store.Sync(ctx, owner, revs, status.CurrentRevision, collisionCount)
//	// persist cc in status even when err != nil, then create/delete pods, then:
//	for _, r := range revision.TruncateCandidates(revs, revision.Live(current, update, podRevisions...), limit) {
//		_ = store.Delete(ctx, r)
//	}
package revision
