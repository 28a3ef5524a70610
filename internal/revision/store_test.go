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

// These tests use controller-runtime's fake client ONLY to unit-test the
// Store's own logic (collision handling, renumbering, deletion, Sync's
// branches). They prove nothing about a real apiserver; that proof is the
// controller's envtest suite.

import (
	"context"
	"errors"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// writes counts the writes a fake client received.
type writes struct{ create, patch, update, del int }

// total is the number of writes of any kind.
func (w *writes) total() int { return w.create + w.patch + w.update + w.del }

// newFake returns a fake client holding objs whose writes are counted in w;
// funcs, if given, override calls (they must call through themselves).
func newFake(t *testing.T, w *writes, funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := interceptor.Funcs{}
	if funcs != nil {
		f = *funcs
	}
	create, patch, update, del := f.Create, f.Patch, f.Update, f.Delete
	f.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		w.create++
		if create != nil {
			return create(ctx, c, obj, opts...)
		}
		return c.Create(ctx, obj, opts...)
	}
	f.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch,
		opts ...client.PatchOption) error {
		w.patch++
		if patch != nil {
			return patch(ctx, c, obj, p, opts...)
		}
		return c.Patch(ctx, obj, p, opts...)
	}
	f.Update = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		w.update++
		if update != nil {
			return update(ctx, c, obj, opts...)
		}
		return c.Update(ctx, obj, opts...)
	}
	f.Delete = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		w.del++
		if del != nil {
			return del(ctx, c, obj, opts...)
		}
		return c.Delete(ctx, obj, opts...)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(f).Build()
}

// mustNew is New for owners known to be valid.
func mustNew(t *testing.T, owner Owner, n int64) *appsv1.ControllerRevision {
	t.Helper()
	r, err := New(owner, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// templateWithImage returns webTemplate running image.
func templateWithImage(image string) *corev1.PodTemplateSpec {
	tmpl := webTemplate()
	tmpl.Spec.Containers[0].Image = image
	return tmpl
}

// listAll returns every revision the client holds.
func listAll(t *testing.T, c client.Client) []appsv1.ControllerRevision {
	t.Helper()
	var list appsv1.ControllerRevisionList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestStoreCreate(t *testing.T) {
	owner := testOwner(webTemplate())
	ours := mustNew(t, owner, 3)
	data := ours.Data.Raw

	// squatter holds our first name with other data.
	squatter := mustNew(t, testOwner(templateWithImage("other")), 1)
	squatter.Name = ours.Name
	// twin holds our first name and data, with another controller.
	twin := ours.DeepCopy()
	twin.OwnerReferences[0].UID = "uid-other"

	tests := []struct {
		name          string
		existing      []client.Object
		wantName      string
		wantCollision int32
		wantRevision  int64 // the returned object's number: 3 if we created it
		wantObjects   int
	}{
		{name: "free name", wantName: ours.Name, wantRevision: 3, wantObjects: 1},
		{name: "name taken by equal revision of ours returns it", existing: []client.Object{
			func() client.Object { r := ours.DeepCopy(); r.Revision = 1; return r }()},
			wantName: ours.Name, wantRevision: 1, wantObjects: 1},
		{name: "name taken by other data bumps collisionCount", existing: []client.Object{squatter},
			wantName: Name("web", Hash(data, ptr.To[int32](1))), wantCollision: 1, wantRevision: 3, wantObjects: 2},
		{name: "name taken by equal data of another controller bumps collisionCount", existing: []client.Object{twin},
			wantName: Name("web", Hash(data, ptr.To[int32](1))), wantCollision: 1, wantRevision: 3, wantObjects: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFake(t, &writes{}, nil, tt.existing...)
			s := &Store{Client: c}
			cc := int32(0)
			in := ours.DeepCopy()
			got, err := s.Create(context.Background(), in, &cc)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.wantName || cc != tt.wantCollision || got.Revision != tt.wantRevision {
				t.Fatalf("got %s rev %d, collisionCount %d; want %s rev %d, %d",
					got.Name, got.Revision, cc, tt.wantName, tt.wantRevision, tt.wantCollision)
			}
			if got.Labels[HashLabel] != Hash(data, &cc) {
				t.Fatalf("hash label %q not renamed with the name", got.Labels[HashLabel])
			}
			if n := len(listAll(t, c)); n != tt.wantObjects {
				t.Fatalf("%d revisions stored, want %d", n, tt.wantObjects)
			}
			if in.Name != ours.Name || in.ResourceVersion != "" {
				t.Fatal("Create modified its input")
			}
		})
	}
}

// A namesake deleted with --cascade=orphan leaves our revision orphaned
// under our name: Create must not collide with it (its pods carry its hash).
func TestStoreCreateLeavesAnOrphanOfOurTemplateToAdopt(t *testing.T) {
	ours := mustNew(t, testOwner(webTemplate()), 3)
	orphan := ours.DeepCopy()
	orphan.OwnerReferences = nil
	c := newFake(t, &writes{}, nil, orphan)
	cc := int32(0)
	_, err := (&Store{Client: c}).Create(context.Background(), ours.DeepCopy(), &cc)
	if !errors.Is(err, ErrOrphanHoldsName) || cc != 0 {
		t.Fatalf("Create over an orphan of our template: %v, collisionCount %d; want ErrOrphanHoldsName and 0", err, cc)
	}
	if n := len(listAll(t, c)); n != 1 {
		t.Fatalf("%d revisions stored, want the orphan alone", n)
	}
}

func TestStoreCreateReadsTakenNameFromAPIReader(t *testing.T) {
	ours := mustNew(t, testOwner(webTemplate()), 1)
	apiServer := newFake(t, &writes{}, nil, ours.DeepCopy())
	// The cache has not seen the revision yet: every cached Get says NotFound.
	staleGet := &interceptor.Funcs{Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey,
		obj client.Object, _ ...client.GetOption) error {
		return apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), key.Name)
	}, Create: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		return apiServer.Create(ctx, obj, opts...)
	}}

	cc := int32(0)
	s := &Store{Client: newFake(t, &writes{}, staleGet), APIReader: apiServer}
	got, err := s.Create(context.Background(), ours, &cc)
	if err != nil || got.Name != ours.Name || cc != 0 {
		t.Fatalf("with APIReader: got %v, %v, collisionCount %d", got, err, cc)
	}

	// Without an APIReader the stale cache cannot explain the conflict: Create gives up.
	s.APIReader = nil
	_, err = s.Create(context.Background(), ours, &cc)
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("want AlreadyExists after giving up, got %v", err)
	}
}

func TestStoreCreateGivesUp(t *testing.T) {
	ours := mustNew(t, testOwner(webTemplate()), 1)
	squatter := mustNew(t, testOwner(templateWithImage("other")), 1)
	// Every name is taken by a revision with other data.
	funcs := &interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			return apierrors.NewAlreadyExists(appsv1.Resource("controllerrevisions"), obj.GetName())
		},
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object,
			_ ...client.GetOption) error {
			squatter.DeepCopyInto(obj.(*appsv1.ControllerRevision))
			obj.SetName(key.Name)
			return nil
		},
	}
	w := &writes{}
	cc := int32(5)
	_, err := (&Store{Client: newFake(t, w, funcs)}).Create(context.Background(), ours, &cc)
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("want wrapped AlreadyExists, got %v", err)
	}
	if w.create != maxCreateAttempts || cc != 5+maxCreateAttempts {
		t.Fatalf("%d attempts, collisionCount %d", w.create, cc)
	}
}

func TestStoreCreateErrors(t *testing.T) {
	ours := mustNew(t, testOwner(webTemplate()), 1)
	orphan := ours.DeepCopy()
	orphan.OwnerReferences = nil
	forbidden := &interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object,
		...client.CreateOption) error {
		return apierrors.NewForbidden(appsv1.Resource("controllerrevisions"), "x", errors.New("no"))
	}}
	tests := []struct {
		name  string
		funcs *interceptor.Funcs
		rev   *appsv1.ControllerRevision
		cc    *int32
		check func(error) bool
	}{
		{name: "nil collisionCount", rev: ours, check: func(err error) bool { return err != nil }},
		{name: "nil revision", cc: ptr.To[int32](0), check: func(err error) bool { return err != nil }},
		{name: "no controller", rev: orphan, cc: ptr.To[int32](0), check: func(err error) bool { return err != nil }},
		{name: "API error is wrapped", funcs: forbidden, rev: ours, cc: ptr.To[int32](0), check: apierrors.IsForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&Store{Client: newFake(t, &writes{}, tt.funcs)}).Create(context.Background(), tt.rev, tt.cc)
			if !tt.check(err) {
				t.Fatalf("unexpected error %v", err)
			}
		})
	}
}

func TestStoreRenumber(t *testing.T) {
	stored := mustNew(t, testOwner(webTemplate()), 1)
	w := &writes{}
	c := newFake(t, w, nil, stored)
	s := &Store{Client: c}
	ctx := context.Background()

	var fresh appsv1.ControllerRevision
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), &fresh); err != nil {
		t.Fatal(err)
	}
	got, err := s.Renumber(ctx, &fresh, 4)
	if err != nil || got.Revision != 4 || fresh.Revision != 1 {
		t.Fatalf("got %v, %v; input revision %d", got, err, fresh.Revision)
	}
	var after appsv1.ControllerRevision
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), &after); err != nil || after.Revision != 4 {
		t.Fatalf("stored revision %d, %v", after.Revision, err)
	}
	if string(after.Data.Raw) != string(stored.Data.Raw) {
		t.Fatal("Renumber changed the data")
	}

	before := w.total()
	if same, err := s.Renumber(ctx, got, 4); err != nil || same.Revision != 4 || w.total() != before {
		t.Fatalf("same number: %v, %v, %d writes", same, err, w.total()-before)
	}

	gone := stored.DeepCopy()
	gone.Name = "gone"
	if _, err := s.Renumber(ctx, gone, 9); !apierrors.IsNotFound(err) {
		t.Fatalf("want wrapped NotFound, got %v", err)
	}
}

func TestStoreDelete(t *testing.T) {
	stored := mustNew(t, testOwner(webTemplate()), 1)
	stored.UID = "uid-rev"
	conflict := &interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object,
		...client.DeleteOption) error {
		return apierrors.NewConflict(appsv1.Resource("controllerrevisions"), "x", errors.New("uid precondition"))
	}}
	forbidden := &interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object,
		...client.DeleteOption) error {
		return apierrors.NewForbidden(appsv1.Resource("controllerrevisions"), "x", errors.New("no"))
	}}
	tests := []struct {
		name     string
		funcs    *interceptor.Funcs
		existing []client.Object
		rev      *appsv1.ControllerRevision
		check    func(error) bool
	}{
		{name: "deletes", existing: []client.Object{stored.DeepCopy()}, rev: stored,
			check: func(err error) bool { return err == nil }},
		{name: "not found is success", rev: stored, check: func(err error) bool { return err == nil }},
		{name: "UID precondition conflict is success", funcs: conflict, rev: stored,
			check: func(err error) bool { return err == nil }},
		{name: "conflict without UID is an error", funcs: conflict,
			rev:   func() *appsv1.ControllerRevision { r := stored.DeepCopy(); r.UID = ""; return r }(),
			check: apierrors.IsConflict},
		{name: "other errors are wrapped", funcs: forbidden, rev: stored, check: apierrors.IsForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFake(t, &writes{}, tt.funcs, tt.existing...)
			if err := (&Store{Client: c}).Delete(context.Background(), tt.rev); !tt.check(err) {
				t.Fatalf("unexpected error %v", err)
			}
			if tt.funcs == nil && len(listAll(t, c)) != 0 {
				t.Fatal("revision still stored")
			}
		})
	}
}

func TestStoreList(t *testing.T) {
	owner := testOwner(webTemplate())
	newer := mustNew(t, testOwner(templateWithImage("v2")), 2)
	older := mustNew(t, owner, 1)
	foreign := mustNew(t, testOwner(templateWithImage("v3")), 3)
	foreign.OwnerReferences[0].UID = "uid-other"
	orphan := mustNew(t, testOwner(templateWithImage("v4")), 4)
	orphan.OwnerReferences = nil
	elsewhere := mustNew(t, testOwner(templateWithImage("v5")), 5)
	elsewhere.Namespace = "other-ns"
	unselected := mustNew(t, testOwner(templateWithImage("v6")), 6)
	unselected.Labels["app"] = "db"

	objs := []client.Object{newer, older, foreign, orphan, elsewhere, unselected}
	for _, byOwner := range []bool{false, true} {
		t.Run(fmt.Sprintf("byOwner=%v", byOwner), func(t *testing.T) {
			c := newFake(t, &writes{}, nil, objs...)
			if byOwner { // the fake refuses a field selector it has no index for
				c = newFakeIndexed(t, objs...)
			}
			s := &Store{Client: c, ByOwner: byOwner}
			sel := labels.SelectorFromSet(labels.Set{"app": "web"})
			got, err := s.List(context.Background(), "ns", sel, types.UID("uid-web"))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0].Name != older.Name || got[1].Name != newer.Name {
				t.Fatalf("List = %v, want [%s %s]", names(got), older.Name, newer.Name)
			}
			all, err := s.List(context.Background(), "ns", nil, types.UID("uid-web"))
			if err != nil || len(all) != 3 {
				t.Fatalf("nil selector: %v, %v", names(all), err)
			}
		})
	}
}

// newFakeIndexed is a fake client holding objs with [OwnerIndex].
func newFakeIndexed(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&appsv1.ControllerRevision{}, OwnerIndex, OwnerIndexValues).Build()
}

// Compile-time check: tests hand a metav1.ObjectMeta to Owner.Object.
var _ metav1.Object = &metav1.ObjectMeta{}
