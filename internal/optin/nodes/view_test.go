package nodes

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// podsOn is the pod cache as the view reads it: each object's pods, by
// the object's UID.
type podsOn map[types.UID][]*corev1.Pod

func (p podsOn) Owned(owner types.UID) ([]*corev1.Pod, error) { return p[owner], nil }

// roundTrip counts the requests that read every Node: a list, or a
// watch that starts with every Node (client-go's watch-list).
type roundTrip struct {
	next  http.RoundTripper
	lists *atomic.Int32
}

func (r roundTrip) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if req.Method == http.MethodGet && req.URL.Path == "/api/v1/nodes" && (q.Get("watch") != "true" || q.Get("sendInitialEvents") == "true") {
		r.lists.Add(1)
	}
	return r.next.RoundTrip(req)
}

// TestViewOnAnAPIServer: against a real kube-apiserver, the two modules
// of one setup read one Node informer (one list of Nodes), see what it
// holds, and each is told only of the node changes it reads, for its own
// objects with pods on the node. A manager denied Nodes lists none, and
// every module's objects see the denial.
func TestViewOnAnAPIServer(t *testing.T) {
	cfg, c := startEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}}}
	n2 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"zone": "b"}}}
	for _, o := range []client.Object{n1, n2, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	drained, waved := create(t, c, "drained", drainLike), create(t, c, "waved", wavesLike)
	both := create(t, c, "both", drainLike, wavesLike)
	create(t, c, "plain")
	pods := podsOn{drained.UID: {podOn("n1")}, waved.UID: {podOn("n1")}, both.UID: {podOn("n2")}}

	t.Run("shared", func(t *testing.T) {
		var lists atomic.Int32
		env := optin.BuildEnv{Reader: c, Writer: c, Pods: pods, Config: counting(cfg, &lists), Log: logr.Discard(),
			Shared: optin.NewShared()}
		d, w := For(env, drainLike, DrainingChanged), For(env, wavesLike, LabelsChanged)
		for _, part := range []*Watch{d, w} {
			go func() { _ = part.Start(ctx) }()
		}
		waitFor(t, func() bool { return w.Seen().Synced() }) // Seen wakes the view: an object opts in
		// Each module's objects once the view started; the waves module's
		// also for the nodes the informer's first list added.
		expectDistinct(t, d, "both drained")
		expectDistinct(t, w, "both waved")
		s := d.Seen()
		if v, has, ok := s.Label("n1", "zone"); v != "a" || !has || !ok {
			t.Errorf("n1's zone: %q %v %v", v, has, ok)
		}
		if _, has, ok := s.Label("n1", "rack"); has || !ok {
			t.Errorf("n1's rack: has %v, seen %v; want a node seen without the label", has, ok)
		}
		if _, _, ok := s.Label("n9", "zone"); ok {
			t.Error("a node that does not exist seen")
		}
		if len(s.DrainingNodes()) != 0 || s.Denied {
			t.Errorf("seen %v draining, denied %v", s.DrainingNodes(), s.Denied)
		}

		update(t, c, "n1", func(n *corev1.Node) { n.Spec.Unschedulable = true })
		waitFor(t, func() bool { return d.Seen().DrainingNodes()["n1"] })
		expect(t, d, "drained")
		expect(t, w, "") // waves reads no cordon
		update(t, c, "n1", func(n *corev1.Node) { n.Labels["zone"] = "c" })
		expect(t, w, "waved")
		expect(t, d, "") // drain reads no label
		if v, _, _ := w.Seen().Label("n1", "zone"); v != "c" {
			t.Errorf("n1's zone %q after its change, want c", v)
		}
		if err := c.Delete(ctx, n2); err != nil {
			t.Fatal(err)
		}
		expect(t, w, "both")
		expect(t, d, "") // n2 was not draining
		if n := lists.Load(); n != 1 {
			t.Errorf("Nodes listed %d times, want once: one informer for both modules", n)
		}
	})

	t.Run("denied", func(t *testing.T) {
		var lists atomic.Int32
		nobody := rest.CopyConfig(cfg)
		nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
		writer, err := client.New(nobody, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		env := optin.BuildEnv{Reader: c, Writer: writer, Pods: pods, Config: counting(nobody, &lists), Log: logr.Discard(),
			Shared: optin.NewShared()}
		d, w := For(env, drainLike, DrainingChanged), For(env, wavesLike, LabelsChanged)
		for _, part := range []*Watch{d, w} {
			go func() { _ = part.Start(ctx) }()
		}
		waitFor(t, func() bool { return d.Seen().Denied && w.Seen().Denied })
		expect(t, d, "both drained")
		expect(t, w, "both waved")
		if d.Seen().Synced() || lists.Load() != 0 {
			t.Errorf("denied, yet synced %v after %d lists", d.Seen().Synced(), lists.Load())
		}
	})
}

// expect waits for w to enqueue the objects want names (sorted, space
// separated), then a little longer for any it should not.
func expect(t *testing.T, w *Watch, want string) {
	t.Helper()
	if got := enqueued(t, w, want); sortedNames(got) != want {
		t.Fatalf("%s enqueued %q; want %q", w.module.Name(), sortedNames(got), want)
	}
}

// expectDistinct is expect, each object named once however often it was
// enqueued (the controller's queue syncs it once).
func expectDistinct(t *testing.T, w *Watch, want string) {
	t.Helper()
	got := enqueued(t, w, want)
	slices.Sort(got)
	if s := strings.Join(slices.Compact(got), " "); s != want {
		t.Fatalf("%s enqueued %q; want %q", w.module.Name(), s, want)
	}
}

// enqueued are the names w enqueued once it enqueued as many as want
// names, and a little longer.
func enqueued(t *testing.T, w *Watch, want string) []string {
	t.Helper()
	var got []string
	deadline := time.After(10 * time.Second)
	for wanted := len(strings.Fields(want)); len(got) < wanted; {
		select {
		case e := <-w.events:
			got = append(got, e.Object.GetName())
		case <-deadline:
			t.Fatalf("%s enqueued %v; want %q", w.module.Name(), got, want)
		}
	}
	time.Sleep(500 * time.Millisecond)
	for len(w.events) > 0 {
		got = append(got, (<-w.events).Object.GetName())
	}
	return got
}

func counting(cfg *rest.Config, lists *atomic.Int32) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return roundTrip{next: rt, lists: lists} })
	return c
}

func podOn(node string) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}}
}

// create makes a MyDeployment a/name that opts into modules.
func create(t *testing.T, c client.Client, name string, modules ...annotated) *appsv1beta1.MyDeployment {
	t.Helper()
	md := optedInto(name, modules...)
	md.UID = ""
	labels := map[string]string{"app": name}
	md.Spec = appsv1beta1.MyDeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}}
	if err := c.Create(context.Background(), md); err != nil {
		t.Fatal(err)
	}
	return md
}

// update changes the node name, retrying on conflicts.
func update(t *testing.T, c client.Client, name string, change func(*corev1.Node)) {
	t.Helper()
	waitFor(t, func() bool {
		n := &corev1.Node{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
			return false
		}
		change(n)
		return c.Update(context.Background(), n) == nil
	})
}

// startEnv starts envtest (a real kube-apiserver and etcd) with the CRDs.
func startEnv(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env.BinaryAssetsDirectory = filepath.Join(root, "bin", "k8s")
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: testScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, c
}
