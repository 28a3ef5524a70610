package revision

// Fake client only to unit-test the Store's own logic; the proof against a
// real apiserver is the controller's envtest suite (ownership_test.go).

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestStoreOrphansAndAdopt(t *testing.T) {
	owner := testOwner(webTemplate())
	orphan := func(name string, refs ...metav1.OwnerReference) *appsv1.ControllerRevision {
		r := mustNew(t, owner, 1)
		r.Name, r.OwnerReferences = name, refs
		return r
	}
	plain := orphan("web-orphan")
	// listed lists the owner already, not as its controller.
	listed := orphan("web-listed", metav1.OwnerReference{APIVersion: ownerGVK.GroupVersion().String(),
		Kind: ownerGVK.Kind, Name: "web", UID: "uid-web"})
	ours := mustNew(t, owner, 2)
	foreign := mustNew(t, testOwner(webTemplate()), 3)
	foreign.Name, foreign.OwnerReferences[0].UID = "web-foreign", "uid-other"
	otherApp := orphan("other-orphan")
	otherApp.Labels = map[string]string{"app": "other"}
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})

	for _, byOwner := range []bool{false, true} {
		c := newFakeIndexed(t, plain, listed, ours, foreign, otherApp)
		s := &Store{Client: c, ByOwner: byOwner}
		got, err := s.Orphans(context.Background(), "ns", sel)
		if err != nil {
			t.Fatal(err)
		}
		if n := names(got); len(n) != 2 || !(n[0] == "web-listed" && n[1] == "web-orphan" || n[0] == "web-orphan" && n[1] == "web-listed") {
			t.Fatalf("ByOwner=%v: Orphans = %v, want web-orphan and web-listed", byOwner, n)
		}
		if none, _ := s.Orphans(context.Background(), "ns", labels.Everything()); len(none) != 0 {
			t.Errorf("an empty selector adopts nothing, got %v", names(none))
		}
		for _, rev := range got {
			adopted, err := s.Adopt(context.Background(), owner, rev)
			if err != nil {
				t.Fatalf("Adopt(%s): %v", rev.Name, err)
			}
			stored := &appsv1.ControllerRevision{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(rev), stored); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*appsv1.ControllerRevision{adopted, stored} {
				if len(r.OwnerReferences) != 1 || !controlledBy(r, "uid-web") ||
					!ptr.Deref(r.OwnerReferences[0].BlockOwnerDeletion, false) {
					t.Errorf("%s after adoption: owners %+v, want one controller reference to uid-web", rev.Name, r.OwnerReferences)
				}
			}
			if metav1.GetControllerOfNoCopy(rev) != nil {
				t.Errorf("Adopt modified its argument %s", rev.Name)
			}
		}
		listedNow, err := s.List(context.Background(), "ns", sel, types.UID("uid-web"))
		if err != nil || len(listedNow) != 3 {
			t.Errorf("ByOwner=%v: after adoption List = %v, %v; want 3", byOwner, names(listedNow), err)
		}
	}

	t.Run("a revision changed since it was read is left alone", func(t *testing.T) {
		c := newFakeIndexed(t, plain)
		s := &Store{Client: c}
		stale := plain.DeepCopy()
		stale.ResourceVersion = "1"
		if err := c.Update(context.Background(), plain.DeepCopy()); err != nil { // bumps resourceVersion
			t.Fatal(err)
		}
		if _, err := s.Adopt(context.Background(), owner, stale); !apierrors.IsConflict(err) {
			t.Fatalf("Adopt of a stale revision: %v, want a Conflict", err)
		}
		if _, err := s.Adopt(context.Background(), owner, ours); err == nil {
			t.Fatal("Adopt of a controlled revision succeeded")
		}
	})
}
