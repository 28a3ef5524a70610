package chaos

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// eventually polls cond every 100ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDeletionAndOwnership: a MyDeployment deleted mid-rollout takes its
// pods and revisions with it and nothing else; pods of other owners that
// match its selector are never touched; orphans are adopted only when they
// match the selector and the update revision.
func TestDeletionAndOwnership(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "chaos-ownership")
	m := newManager("ownership", nil)
	if err := m.start(); err != nil {
		t.Fatal(err)
	}
	defer m.stop()

	bystander := &tracked{name: "bystander", ns: ns, strategy: strategies[0]}
	victim := &tracked{name: "victim", ns: ns, strategy: strategies[0]}
	for _, d := range []*tracked{bystander, victim} {
		if err := suite.create(ctx, d, spec{replicas: 3, image: 1}); err != nil {
			t.Fatal(err)
		}
	}
	md := &appsv1beta1.MyDeployment{}
	if err := suite.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "victim"}, md); err != nil {
		t.Fatal(err)
	}
	rev := &appsv1.ControllerRevision{}
	if err := suite.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: md.Status.UpdateRevision}, rev); err != nil {
		t.Fatal(err)
	}
	hash := rev.Labels["controller.kubernetes.io/hash"]
	if hash == "" {
		t.Fatalf("revision %s has no hash label", rev.Name)
	}

	// A ConfigMap stands for another controller (GC keeps pods it owns).
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-owner", Namespace: ns}}
	if err := suite.c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	foreignRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: other.Name, UID: other.UID,
		Controller: ptr.To(true)}
	pod := func(name string, labels map[string]string, owners ...metav1.OwnerReference) *corev1.Pod {
		l := map[string]string{suiteLabel: "true"}
		for k, v := range labels {
			l[k] = v
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l, OwnerReferences: owners},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image(1)}},
				TerminationGracePeriodSeconds: ptr.To[int64](0)},
		}
		if err := suite.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	revLabels := func(app, h string) map[string]string {
		return map[string]string{"app": app, appsv1beta1.RevisionLabel: rev.Name, appsv1beta1.PodTemplateHashLabel: h}
	}
	// Adopting the matching orphan briefly gives the victim one pod too many.
	b := victim.steady(victim.cur)
	b.maxActive++
	b.maxPerRevision++
	suite.w.setBounds(victim.uid, b)
	untouchable := map[string]*corev1.Pod{
		"foreign-owned":     pod("foreign-owned", revLabels("victim", hash), foreignRef),
		"orphan-other-hash": pod("orphan-other-hash", revLabels("victim", "0000000000")),
		"orphan-no-labels":  pod("orphan-no-labels", map[string]string{"app": "victim"}),
		"orphan-other-app":  pod("orphan-other-app", revLabels("nomatch", hash)),
	}
	match := pod("orphan-match", revLabels("victim", hash))

	eventually(t, time.Minute, "the matching orphan is adopted", func() error {
		for _, p := range suite.w.podHistory(match.UID) {
			if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == victim.uid {
				return nil
			}
		}
		return fmt.Errorf("pod %s never had the victim as controller", match.Name)
	})
	if err := suite.waitConverged(ctx, victim, victim.cur); err != nil {
		t.Fatal(err)
	}
	suite.w.setBounds(victim.uid, victim.steady(victim.cur))

	bystanderPods := podUIDs(t, ns, bystander.uid)
	bystanderRevs := revisionNames(t, ns, bystander.uid)

	// Delete the victim in the middle of a rollout. kwok makes pods Ready at
	// once, so a rollout of 3 pods can finish between two polls; a long
	// minReadySeconds holds it after its first surge pod (maxUnavailable 0).
	suite.w.setBounds(victim.uid, victim.inFlight(victim.cur, spec{replicas: 3, image: 2}))
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"minReadySeconds":300,`+
		`"template":{"spec":{"containers":[{"name":"app","image":"`+image(2)+`"}]}}}}`))
	if err := suite.c.Patch(ctx, &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: ns}}, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the victim's rollout reaches its middle", func() error {
		if v := suite.w.view(victim.uid); len(v.revisions) < 2 {
			return fmt.Errorf("revisions %v", v.revisions)
		}
		return nil
	})
	// From here on the garbage collector takes the victim's pods: no bounds.
	suite.w.untrack(victim.uid)
	if err := suite.c.Delete(ctx, &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the victim's pods and revisions are gone", func() error {
		if p := podUIDs(t, ns, victim.uid); len(p) > 0 {
			return fmt.Errorf("%d pods left", len(p))
		}
		if r := revisionNames(t, ns, victim.uid); len(r) > 0 {
			return fmt.Errorf("revisions left: %v", r)
		}
		return nil
	})

	// Give the controller time to do anything it should not, then look.
	time.Sleep(2 * time.Second)
	if got := podUIDs(t, ns, bystander.uid); !slices.Equal(got, bystanderPods) {
		t.Errorf("the bystander's pods changed: %v, want %v", got, bystanderPods)
	}
	if got := revisionNames(t, ns, bystander.uid); !slices.Equal(got, bystanderRevs) {
		t.Errorf("the bystander's revisions changed: %v, want %v", got, bystanderRevs)
	}
	for name, created := range untouchable {
		cur := &corev1.Pod{}
		if err := suite.c.Get(ctx, client.ObjectKeyFromObject(created), cur); err != nil {
			t.Errorf("pod %s: %v", name, err)
			continue
		}
		for _, seen := range append(suite.w.podHistory(created.UID), cur) {
			if !apiequality.Semantic.DeepEqual(seen.OwnerReferences, created.OwnerReferences) || seen.DeletionTimestamp != nil {
				t.Errorf("pod %s was touched: owners %v, deletionTimestamp %v", name, seen.OwnerReferences, seen.DeletionTimestamp)
				break
			}
		}
	}
	requireNoViolations(t)
	figures.note("ownership: a MyDeployment deleted mid-rollout left 0 pods and 0 revisions; its neighbour kept its %d pods "+
		"and %d revisions; 4 foreign or non-matching pods never touched; 1 matching orphan adopted", len(bystanderPods), len(bystanderRevs))
}

// podUIDs lists the UIDs of the pods owner controls in ns, sorted.
func podUIDs(t *testing.T, ns string, owner types.UID) []string {
	t.Helper()
	var pods corev1.PodList
	if err := suite.c.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOfNoCopy(&p); ref != nil && ref.UID == owner {
			out = append(out, string(p.UID))
		}
	}
	slices.Sort(out)
	return out
}

// revisionNames lists the ControllerRevisions owner controls in ns, sorted.
func revisionNames(t *testing.T, ns string, owner types.UID) []string {
	t.Helper()
	var revs appsv1.ControllerRevisionList
	if err := suite.c.List(context.Background(), &revs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range revs.Items {
		if ref := metav1.GetControllerOfNoCopy(&r); ref != nil && ref.UID == owner {
			out = append(out, r.Name)
		}
	}
	slices.Sort(out)
	return out
}
