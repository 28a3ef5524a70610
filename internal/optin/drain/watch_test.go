package drain

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
)

func TestTrimNodeKeepsWhatDrainsRead(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "7", Labels: map[string]string{"zone": "a"}},
		Spec:       corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.0.0.0/24", Taints: []corev1.Taint{{Key: "k"}}},
		Status:     corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"nginx"}}}},
	}
	out, err := trimNode(node)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Node)
	if got.Name != "n" || got.ResourceVersion != "7" || !got.Spec.Unschedulable || len(got.Spec.Taints) != 1 {
		t.Errorf("trimmed away what drains read: %+v", got)
	}
	if got.Labels != nil || got.Spec.PodCIDR != "" || len(got.Status.Images) != 0 {
		t.Errorf("kept what drains do not read: %+v", got)
	}
}

// TestNodeWatchDenied: with Nodes denied, the watch starts no informer,
// says so to the syncs of opted-in objects, and enqueues those (only) once.
func TestNodeWatchDenied(t *testing.T) {
	w := watchOf(&appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "plain"}})
	asked := 0
	w.mayWatch = func(context.Context) (bool, error) { asked++; return false, nil }

	if _, denied := w.snapshot(); denied {
		t.Fatal("denied before the watch asked")
	}
	for range 2 {
		if started, err := w.try(context.Background()); started || err != nil {
			t.Fatalf("try: started %v, err %v", started, err)
		}
	}
	if nodes, denied := w.snapshot(); !denied || len(nodes) != 0 {
		t.Fatalf("snapshot: %v, denied %v; want no node, denied", nodes, denied)
	}
	if asked != 2 || len(w.events) != 1 {
		t.Fatalf("asked %d times, %d enqueued; want 2 and 1", asked, len(w.events))
	}
	if ev := <-w.events; ev.Object.GetName() != "opted" {
		t.Fatalf("enqueued %s, want opted", ev.Object.GetName())
	}
	var none *Watch
	if nodes, denied := none.snapshot(); nodes != nil || denied {
		t.Fatal("a nil watch sees a drain")
	}
}

// TestNodeWatchRetriesAnError: an access check that errs is no answer. The
// watch asks again within a short backoff, not at its next poll, and
// only the answer "not allowed" makes it denied.
func TestNodeWatchRetriesAnError(t *testing.T) {
	w := watchOf()
	var asked atomic.Int32
	w.mayWatch = func(context.Context) (bool, error) {
		if asked.Add(1) <= 2 {
			return false, errors.New("injected: no answer")
		}
		return false, nil
	}
	if w.poll < 10*time.Second {
		t.Fatalf("poll %s: the test needs it far above its bound", w.poll)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go func() { _ = w.Start(ctx) }()
	for w.state.Load() != nodesDenied {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("not denied after %s (asked %d times): an error waited for the poll", time.Since(start), asked.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if asked.Load() != 3 {
		t.Fatalf("asked %d times, want 3 (two errors, then the answer)", asked.Load())
	}
}

// watchOf is a node watch reading, through a fake client, a
// MyDeployment "a/opted" that opts into drain SurgeFirst and more.
func watchOf(more ...client.Object) *Watch {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = appsv1beta1.AddToScheme(s)
	opted := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "opted",
		Annotations: map[string]string{appsv1beta1.DrainAnnotation: appsv1beta1.DrainSurgeFirst}}}
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(append(more, opted)...).Build()
	return newWatch(optin.BuildEnv{Reader: cl, Writer: cl, Pods: podwatch.NewIndex(), Log: logr.Discard()})
}

func TestNodeDraining(t *testing.T) {
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
		if got := NodeDraining(&corev1.Node{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: draining %v, want %v", name, got, tc.want)
		}
	}
}
