package nodes

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
)

// annotated is a module whose objects opt in with its annotation: the
// drain and waves modules as the view reads them (their packages import
// this one).
type annotated string

func (a annotated) Name() string   { return string(a) }
func (a annotated) Keys() []string { return []string{string(a)} }
func (a annotated) Module() string { return string(a) }
func (a annotated) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	if _, ok := md.Annotations[string(a)]; ok {
		return a, nil
	}
	return nil, nil
}

const (
	drainLike annotated = "drain.test/on"
	wavesLike annotated = "waves.test/on"
)

// optedInto is a MyDeployment a/name that opts into modules.
func optedInto(name string, modules ...annotated) *appsv1beta1.MyDeployment {
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name),
		Annotations: map[string]string{}}}
	for _, m := range modules {
		md.Annotations[string(m)] = "true"
	}
	return md
}

// testScheme knows the API's kinds and MyDeployments.
func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = appsv1beta1.AddToScheme(s)
	return s
}

// fakeEnv is a setup's BuildEnv reading objs through a fake client.
func fakeEnv(objs ...client.Object) optin.BuildEnv {
	cl := fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(objs...).Build()
	return optin.BuildEnv{Reader: cl, Writer: cl, Pods: podwatch.NewIndex(), Log: logr.Discard(), Shared: optin.NewShared()}
}

func TestTrimNodeKeepsWhatTheModulesRead(t *testing.T) {
	gone := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "7", Labels: map[string]string{"zone": "a"},
			DeletionTimestamp: &gone, Annotations: map[string]string{"big": "yes"}},
		Spec:   corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.0.0.0/24", Taints: []corev1.Taint{{Key: "k"}}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"nginx"}}}},
	}
	out, err := trimNode(node)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Node)
	if got.Name != "n" || got.ResourceVersion != "7" || !got.Spec.Unschedulable || len(got.Spec.Taints) != 1 ||
		got.Labels["zone"] != "a" || got.DeletionTimestamp == nil {
		t.Errorf("trimmed away what drain and waves read: %+v", got)
	}
	if got.Annotations != nil || got.Spec.PodCIDR != "" || len(got.Status.Images) != 0 {
		t.Errorf("kept what no module reads: %+v", got)
	}
}

func TestDraining(t *testing.T) {
	taint := func(key string) corev1.NodeSpec {
		return corev1.NodeSpec{Taints: []corev1.Taint{{Key: key, Effect: corev1.TaintEffectNoSchedule}}}
	}
	for name, tc := range map[string]struct {
		spec corev1.NodeSpec
		want bool
	}{
		"schedulable":                       {corev1.NodeSpec{}, false},
		"cordoned":                          {corev1.NodeSpec{Unschedulable: true}, true},
		"tainted by the Cluster Autoscaler": {taint(appsv1beta1.TaintToBeDeleted), true},
		"tainted by Karpenter":              {taint(appsv1beta1.TaintKarpenterDisrupted), true},
		"a deletion candidate (soft) only":  {taint("DeletionCandidateOfClusterAutoscaler"), false},
		"another NoSchedule taint":          {taint("dedicated"), false},
		"node.kubernetes.io/unschedulable":  {taint(corev1.TaintNodeUnschedulable), false},
	} {
		if got := Draining(&corev1.Node{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: draining %v, want %v", name, got, tc.want)
		}
	}
}

// TestChanges: which node changes each module's objects sync again for.
func TestChanges(t *testing.T) {
	node := func(zone string, cordoned bool) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"zone": zone}},
			Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	}
	deleting := node("a", true)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name             string
		old, node        *corev1.Node
		draining, labels bool
	}{
		{"added", nil, node("a", false), false, true},
		{"added cordoned", nil, node("a", true), true, true},
		{"cordoned", node("a", false), node("a", true), true, false},
		{"uncordoned", node("a", true), node("a", false), true, false},
		{"relabelled", node("a", false), node("b", false), false, true},
		{"nothing we read", node("a", false), node("a", false), false, false},
		{"a cordoned node being deleted", node("a", true), deleting, true, false},
		{"deleted", node("a", false), nil, false, true},
		{"deleted cordoned", node("a", true), nil, true, true},
	} {
		if got := DrainingChanged(tc.old, tc.node); got != tc.draining {
			t.Errorf("%s: DrainingChanged %v, want %v", tc.name, got, tc.draining)
		}
		if got := LabelsChanged(tc.old, tc.node); got != tc.labels {
			t.Errorf("%s: LabelsChanged %v, want %v", tc.name, got, tc.labels)
		}
	}
}

// TestOneViewPerSetup: the modules of one setup share one view, which
// asks for access once per look however many modules read it; another
// setup (or none: a nil Shared) has its own.
func TestOneViewPerSetup(t *testing.T) {
	env := fakeEnv(optedInto("both", drainLike, wavesLike))
	d, w := For(env, drainLike, DrainingChanged), For(env, wavesLike, LabelsChanged)
	if d.view != w.view {
		t.Fatal("two views in one setup")
	}
	if other := For(fakeEnv(), drainLike, DrainingChanged); other.view == d.view {
		t.Fatal("two setups share a view")
	}
	noShare := env
	noShare.Shared = nil
	if a, b := For(noShare, drainLike, DrainingChanged), For(noShare, wavesLike, LabelsChanged); a.view == b.view {
		t.Fatal("a nil Shared shared a view")
	}
	var asked atomic.Int32
	d.view.mayWatch = func(context.Context) (bool, error) { asked.Add(1); return false, nil }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for _, part := range []*Watch{d, w} {
		go func() { _ = part.Start(ctx); done <- struct{}{} }()
	}
	// Not through Seen: it wakes an idle view, which would look again.
	waitFor(t, func() bool { return d.view.state.Load() == nodesDenied })
	time.Sleep(100 * time.Millisecond) // a second loop, if one ran, would have asked by now
	if n := asked.Load(); n != 1 {
		t.Errorf("asked for access %d times, want once", n)
	}
	cancel()
	<-done
	<-done // both Starts return with ctx
}

// TestViewDenied: with Nodes denied the view starts no informer, every
// module's syncs see the denial, and each module's opted-in objects (only
// they) are enqueued once, on its own Events.
func TestViewDenied(t *testing.T) {
	env := fakeEnv(optedInto("plain"), optedInto("drained", drainLike), optedInto("waved", wavesLike),
		optedInto("both", drainLike, wavesLike))
	d, w := For(env, drainLike, DrainingChanged), For(env, wavesLike, LabelsChanged)
	asked := 0
	d.view.mayWatch = func(context.Context) (bool, error) { asked++; return false, nil }
	if d.Seen().Denied {
		t.Fatal("denied before the view asked")
	}
	for range 2 {
		if started, err := d.view.try(context.Background()); started || err != nil {
			t.Fatalf("try: started %v, err %v", started, err)
		}
	}
	for _, part := range []*Watch{d, w} {
		if s := part.Seen(); !s.Denied || s.Synced() || s.DrainingNodes() != nil {
			t.Fatalf("%s: seen %+v; want denied, no node", part.module.Name(), s)
		}
	}
	if asked != 2 {
		t.Fatalf("asked %d times, want 2", asked)
	}
	if got := names(d); got != "both drained" {
		t.Errorf("drain enqueued %q, want both and drained", got)
	}
	if got := names(w); got != "both waved" {
		t.Errorf("waves enqueued %q, want both and waved", got)
	}
	var none *Watch
	if s := none.Seen(); s.Denied || s.Synced() {
		t.Fatal("a nil watch is denied or sees nodes")
	}
}

// TestViewRetriesAnError: an access check that errs is no answer. The
// view asks again within a short backoff, not at its next poll, and only
// the answer "not allowed" makes it denied.
func TestViewRetriesAnError(t *testing.T) {
	d := For(fakeEnv(optedInto("drained", drainLike)), drainLike, DrainingChanged)
	var asked atomic.Int32
	d.view.mayWatch = func(context.Context) (bool, error) {
		if asked.Add(1) <= 2 {
			return false, errors.New("injected: no answer")
		}
		return false, nil
	}
	if d.view.poll < 10*time.Second {
		t.Fatalf("poll %s: the test needs it far above its bound", d.view.poll)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go func() { _ = d.Start(ctx) }()
	for !d.Seen().Denied {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("not denied after %s (asked %d times): an error waited for the poll", time.Since(start), asked.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if asked.Load() != 3 {
		t.Fatalf("asked %d times, want 3 (two errors, then the answer)", asked.Load())
	}
}

// names are the names of the objects w enqueued so far, sorted, space separated.
func names(w *Watch) string {
	var out []string
	for len(w.events) > 0 {
		out = append(out, (<-w.events).Object.GetName())
	}
	return sortedNames(out)
}

// sortedNames are names sorted, space separated.
func sortedNames(names []string) string {
	slices.Sort(names)
	return strings.Join(names, " ")
}

// waitFor waits up to 10 s for ok.
func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for start := time.Now(); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("timed out")
		}
	}
}
