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

// Sync is tested against controller-runtime's fake client only as a unit test
// of its branching; the real-apiserver behaviour is proven by the controller's
// envtest suite.

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestSync(t *testing.T) {
	v1 := mustNew(t, testOwner(templateWithImage("v1")), 1)
	v2 := mustNew(t, testOwner(templateWithImage("v2")), 2)
	v3 := mustNew(t, testOwner(templateWithImage("v3")), 3)
	// squatter holds the name v3 would get, with other data and another owner.
	squatter := mustNew(t, testOwner(templateWithImage("squat")), 1)
	squatter.Name = v3.Name
	squatter.OwnerReferences[0].UID = "uid-other"

	type want struct {
		current, update string
		updateRevision  int64
		collisionCount  int32
		creates, writes int
	}
	tests := []struct {
		name      string
		image     string
		history   []*appsv1.ControllerRevision // also stored, unless in notStored
		notStored []client.Object
		currentIn string
		want      want
	}{
		{name: "first revision", image: "v1", currentIn: "",
			want: want{current: v1.Name, update: v1.Name, updateRevision: 1, creates: 1, writes: 1}},
		{name: "unchanged template writes nothing", image: "v2", history: []*appsv1.ControllerRevision{v2, v1},
			currentIn: v1.Name, want: want{current: v1.Name, update: v2.Name, updateRevision: 2}},
		{name: "rollback renumbers without creating", image: "v1", history: []*appsv1.ControllerRevision{v1, v2},
			currentIn: v2.Name, want: want{current: v2.Name, update: v1.Name, updateRevision: 3, writes: 1}},
		{name: "rollback to the current revision returns the renumbered object", image: "v1",
			history: []*appsv1.ControllerRevision{v1, v2}, currentIn: v1.Name,
			want: want{current: v1.Name, update: v1.Name, updateRevision: 3, writes: 1}},
		{name: "new template creates the next revision", image: "v3", history: []*appsv1.ControllerRevision{v1, v2},
			currentIn: v2.Name, want: want{current: v2.Name, update: v3.Name, updateRevision: 3, creates: 1, writes: 1}},
		{name: "unknown current falls back to update", image: "v3", history: []*appsv1.ControllerRevision{v1, v2},
			currentIn: "deleted", want: want{current: v3.Name, update: v3.Name, updateRevision: 3, creates: 1, writes: 1}},
		{name: "collision on create is counted", image: "v3", history: []*appsv1.ControllerRevision{v1, v2},
			notStored: []client.Object{squatter}, currentIn: v2.Name,
			want: want{current: v2.Name, update: Name("web", Hash(v3.Data.Raw, ptr.To[int32](1))),
				updateRevision: 3, collisionCount: 1, creates: 2, writes: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]client.Object{}, tt.notStored...)
			history := make([]*appsv1.ControllerRevision, 0, len(tt.history))
			for _, r := range tt.history {
				objs = append(objs, r.DeepCopy())
				history = append(history, r.DeepCopy())
			}
			w := &writes{}
			s := &Store{Client: newFake(t, w, nil, objs...)}
			current, update, cc, err := s.Sync(context.Background(), testOwner(templateWithImage(tt.image)),
				history, tt.currentIn, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := want{current: current.Name, update: update.Name, updateRevision: update.Revision,
				collisionCount: cc, creates: w.create, writes: w.total()}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
			if current.Name == update.Name && current != update {
				t.Fatal("current and update are different objects for the same revision")
			}
			for i, r := range history {
				if r.Name != tt.history[i].Name || r.Revision != tt.history[i].Revision {
					t.Fatal("Sync reordered or modified its input")
				}
			}
		})
	}
}

func TestSyncErrors(t *testing.T) {
	v1 := mustNew(t, testOwner(templateWithImage("v1")), 1)
	v2 := mustNew(t, testOwner(templateWithImage("v2")), 2)
	forbidden := &interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return apierrors.NewForbidden(appsv1.Resource("controllerrevisions"), "x", errors.New("no"))
		},
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return apierrors.NewForbidden(appsv1.Resource("controllerrevisions"), "x", errors.New("no"))
		},
	}
	invalid := testOwner(templateWithImage("v3"))
	invalid.Template.Labels = nil

	tests := []struct {
		name  string
		owner Owner
		check func(error) bool
	}{
		{name: "invalid owner", owner: invalid, check: func(err error) bool { return errors.Is(err, ErrInvalidOwner) }},
		{name: "create fails", owner: testOwner(templateWithImage("v3")), check: apierrors.IsForbidden},
		{name: "renumber fails", owner: testOwner(templateWithImage("v1")), check: apierrors.IsForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &writes{}
			s := &Store{Client: newFake(t, w, forbidden, v1.DeepCopy(), v2.DeepCopy())}
			cur, upd, cc, err := s.Sync(context.Background(), tt.owner,
				[]*appsv1.ControllerRevision{v1, v2}, v1.Name, 4)
			if !tt.check(err) || cur != nil || upd != nil || cc != 4 {
				t.Fatalf("got %v, %v, %d, %v", cur, upd, cc, err)
			}
		})
	}
}
