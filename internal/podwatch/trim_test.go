package podwatch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// The planner and the status must decide the same on trimmed pods as on
// whole ones: random pods that differ in every field the ranking, the
// availability and the counts read, planned both ways.
func TestTrimPodKeepsWhatThePlannerReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	for round := range 300 {
		n := 1 + rng.IntN(30)
		full := make([]*corev1.Pod, n)
		trimmed := make([]*corev1.Pod, n)
		for i := range n {
			full[i] = randomPod(rng, i, now)
			out, err := Trim(full[i].DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			trimmed[i] = out.(*corev1.Pod)
		}
		in := rollout.Input{
			Replicas:        int32(rng.IntN(n + 5)),
			Strategy:        []rollout.Strategy{rollout.Recreate, rollout.RollingUpdate, rollout.RollingUpdate, rollout.RollingUpdate}[rng.IntN(4)],
			MaxSurge:        int32(rng.IntN(4)),
			MaxUnavailable:  int32(rng.IntN(4)),
			MinReadySeconds: int32(rng.IntN(3) * 30),
			Paused:          rng.IntN(6) == 0,
			UpdateRevision:  "rev-b",
			Now:             now,
		}
		in.Pods = full
		want := rollout.Compute(in)
		in.Pods = trimmed
		got := rollout.Compute(in)
		if !slices.Equal(got.Create, want.Create) || got.Reason != want.Reason || got.RequeueAfter != want.RequeueAfter ||
			fmt.Sprint(names(got.Delete)) != fmt.Sprint(names(want.Delete)) {
			t.Fatalf("round %d: plan on trimmed pods %+v (delete %v), on whole pods %+v (delete %v)",
				round, got, names(got.Delete), want, names(want.Delete))
		}
		if w, g := rollout.Count(full, "rev-b", in.MinReadySeconds, now), rollout.Count(trimmed, "rev-b", in.MinReadySeconds, now); w != g {
			t.Fatalf("round %d: counts on trimmed pods %+v, on whole pods %+v", round, g, w)
		}
		for i := range n {
			f, errF := ControllerKeys(full[i])
			tr, errT := ControllerKeys(trimmed[i])
			if errF != nil || errT != nil || fmt.Sprint(f) != fmt.Sprint(tr) {
				t.Fatalf("round %d: controller index %v on trimmed, %v on whole", round, tr, f)
			}
		}
	}
}

func TestTrimPodDropsTheRest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pod := randomPod(rng, 0, time.Now())
	out, _ := Trim(pod.DeepCopy())
	trimmed := out.(*corev1.Pod)
	if len(trimmed.Spec.Containers) != 0 || len(trimmed.Spec.Volumes) != 0 || len(trimmed.ManagedFields) != 0 ||
		trimmed.Annotations["big"] != "" || trimmed.Status.PodIP != "" {
		t.Fatalf("trimmed pod kept fields nobody reads: %+v", trimmed)
	}
	if full, small := pod.Size(), trimmed.Size(); small*2 > full {
		t.Fatalf("trimmed pod is %d bytes of protobuf, the whole one %d: expected under half", small, full)
	}
	if !equality.Semantic.DeepEqual(trimmed.Labels, pod.Labels) || !equality.Semantic.DeepEqual(trimmed.OwnerReferences, pod.OwnerReferences) {
		t.Fatalf("labels or owner references lost: %+v", trimmed.ObjectMeta)
	}
	if same, _ := Trim(&corev1.Node{}); same == nil {
		t.Fatal("a non-pod must pass through")
	}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func randomPod(rng *rand.Rand, i int, now time.Time) *corev1.Pod {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	ago := func() metav1.Time { return metav1.NewTime(now.Add(-time.Duration(rng.IntN(120)) * time.Second)) }
	rev := pick("rev-a", "rev-b")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("pod-%02d", i), Namespace: "ns", UID: types.UID(fmt.Sprintf("uid-%d", i)),
			ResourceVersion:   fmt.Sprint(rng.IntN(1000)),
			CreationTimestamp: metav1.NewTime(now.Add(-time.Duration(rng.IntN(5)) * time.Minute)),
			Labels:            map[string]string{"app": "x", appsv1beta1.RevisionLabel: rev, appsv1beta1.PodTemplateHashLabel: rev + "-h"},
			Annotations:       map[string]string{"big": string(make([]byte, 512))},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.PodSpec{
			NodeName: pick("", "n1", "n2", "n3"),
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:" + rev,
				Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: []corev1.Container{
				{Name: "init", Image: "init"},
				{Name: "sidecar", Image: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodPhase(pick("", "Pending", "Running", "Running", "Running", "Unknown", "Succeeded", "Failed")),
			PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ago(), Reason: "r", Message: "m"},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "img", RestartCount: int32(rng.IntN(3))}},
			InitContainerStatuses: []corev1.ContainerStatus{
				{Name: "init", RestartCount: int32(rng.IntN(3))},
				{Name: "sidecar", RestartCount: int32(rng.IntN(3))},
			},
		},
	}
	if s := pick("", "True", "True", "False"); s != "" {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodReady, Status: corev1.ConditionStatus(s), LastTransitionTime: ago()})
	}
	if c := pick("", "", "5", "-3", "+1", "007"); c != "" {
		pod.Annotations[corev1.PodDeletionCost] = c
	}
	switch rng.IntN(6) {
	case 0:
		pod.DeletionTimestamp = ptr.To(ago())
	case 1: // an orphan
	default:
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.mydeployment.io/v1beta1", Kind: "MyDeployment",
			Name: "md", UID: "md-uid", Controller: ptr.To(true)}}
	}
	return pod
}

// kwokPods returns n pods as the API server sends a MyDeployment's pods
// once kwok has played them (testdata/kwok-pod.json, taken from a kwokctl
// cluster with managedFields), 50 to an object as in the benchmark, each
// encoded in protobuf as the pod informer receives it.
func kwokPods(tb testing.TB, n int) [][]byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "kwok-pod.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(data, &pod); err != nil {
		tb.Fatal(err)
	}
	out := make([][]byte, n)
	for i := range n {
		p := pod.DeepCopy()
		object := fmt.Sprintf("bench-%03d", i/50)
		p.Name, p.UID = fmt.Sprintf("%s-%05d", object, i), types.UID(fmt.Sprintf("0c6e1d5e-8a4b-4f0e-9d3c-%012d", i))
		p.Labels = map[string]string{"app": object, "bench.mydeployment.io/object": object,
			appsv1beta1.RevisionLabel: object + "-7d9c8b6f5", appsv1beta1.PodTemplateHashLabel: "7d9c8b6f5"}
		p.OwnerReferences[0].Name = object
		p.OwnerReferences[0].UID = types.UID(fmt.Sprintf("9f1b2c3d-4e5f-4a6b-8c7d-%012d", i/50))
		if out[i], err = p.Marshal(); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// BenchmarkCachedPod is what a pod watch event costs the manager before any
// handler runs, and what the cache then holds for the pod: each op decodes
// a kwok-played pod from protobuf and trims it (Trim), as the pod
// informer does (ns/op, B/op, allocs/op); retained-B/pod is the heap that
// 10,000 such pods keep in an indexer with the pod informer's indexes.
func BenchmarkCachedPod(b *testing.B) {
	raw := kwokPods(b, 10_000)
	b.Run("decode+trim", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			var pod corev1.Pod
			if err := pod.Unmarshal(raw[i%len(raw)]); err != nil {
				b.Fatal(err)
			}
			if _, err := Trim(&pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("retained", func(b *testing.B) {
		for b.Loop() {
			b.ReportMetric(retainedPerPod(b, raw), "retained-B/pod")
		}
	})
}

// retainedPerPod decodes, trims and indexes every pod of raw as the pod
// informer does, and returns the heap they keep, per pod.
func retainedPerPod(tb testing.TB, raw [][]byte) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, ByController: ControllerKeys})
	for _, data := range raw {
		var pod corev1.Pod
		if err := pod.Unmarshal(data); err != nil {
			tb.Fatal(err)
		}
		trimmed, err := Trim(&pod)
		if err != nil {
			tb.Fatal(err)
		}
		if err := store.Add(trimmed); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(store)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(len(raw))
}
