package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// A write act made, in the order the fakes saw it.
type write struct{ verb, target string }

// writeLog records writes from concurrent callers.
type writeLog struct {
	mu     sync.Mutex
	writes []write
}

func (l *writeLog) add(verb, target string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, write{verb, target})
}

func (l *writeLog) take() []write {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.writes
	l.writes = nil
	return w
}

// clusterPods is a fake pod control over an in-memory set of pods: what it
// creates is Ready at once (a kubelet that is never slow), what it deletes
// or evicts is gone. Every call is logged.
type clusterPods struct {
	log  *writeLog
	mu   sync.Mutex
	pods map[string]*corev1.Pod
	seq  int
	now  time.Time
}

var _ podcontrol.Interface = &clusterPods{}

func (c *clusterPods) Create(_ context.Context, owner *appsv1beta1.MyDeployment, template *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	c.log.add("create", rev.Name)
	pod := podcontrol.NewPod(owner, template, rev)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	pod.Name = fmt.Sprintf("%s-%d", owner.Name, c.seq)
	pod.UID = types.UID(pod.Name)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(c.now.Add(-time.Hour))}}
	c.pods[pod.Name] = pod
	return pod.DeepCopy(), nil
}

func (c *clusterPods) remove(verb string, pod *corev1.Pod) error {
	c.log.add(verb, pod.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, pod.Name)
	return nil
}

func (c *clusterPods) Delete(_ context.Context, _ *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	return c.remove("delete", pod)
}

func (c *clusterPods) Evict(_ context.Context, _ *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	return c.remove("evict", pod)
}

func (c *clusterPods) Adopt(_ context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	c.log.add("adopt", pod.Name)
	adopted := ownership.AsAdopted(pod, owner, rev.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods[pod.Name] = adopted
	return adopted.DeepCopy(), nil
}

func (c *clusterPods) Release(_ context.Context, _ *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	c.log.add("release", pod.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	released := pod.DeepCopy()
	released.OwnerReferences = nil
	c.pods[pod.Name] = released
	return nil
}

func (c *clusterPods) SetGate(_ context.Context, _ *appsv1beta1.MyDeployment, pod *corev1.Pod, status corev1.ConditionStatus, _, _ string) error {
	c.log.add("gate"+string(status), pod.Name)
	return nil
}

func (c *clusterPods) UpdateInPlace(_ context.Context, _ *appsv1beta1.MyDeployment, pod *corev1.Pod, _ *appsv1.ControllerRevision,
	_ *corev1.PodTemplateSpec, _ *inplace.Change) error {
	c.log.add("update", pod.Name)
	return nil
}

// list returns the pods owner controls, and the orphans.
func (c *clusterPods) list(owner types.UID) (owned, orphans []*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pods {
		switch ref := metav1.GetControllerOfNoCopy(p); {
		case ref == nil:
			orphans = append(orphans, p)
		case ref.UID == owner:
			owned = append(owned, p)
		}
	}
	return owned, orphans
}

// loggingClient logs the object patches and deletes it passes on.
type loggingClient struct {
	client.Client
	log *writeLog
}

// Patch logs a patch of annotations by the keys it sets.
func (c loggingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if rev, ok := obj.(*appsv1.ControllerRevision); ok {
		c.log.add("patch-revision", rev.Name)
		return c.Client.Patch(ctx, obj, patch, opts...)
	}
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	var p struct {
		Metadata struct {
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	c.log.add("patch", annotationKeys(p.Metadata.Annotations))
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func annotationKeys[V any](m map[string]V) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ",")
}

func (c loggingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.log.add("delete-revision", obj.GetName())
	return c.Client.Delete(ctx, obj, opts...)
}

func (c loggingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.log.add("create-revision", obj.GetName())
	return c.Client.Create(ctx, obj, opts...)
}

// expectedWrites is what act must write for plan p on md: each in the
// phase act makes it in (see act), phases in order.
func expectedWrites(md *appsv1beta1.MyDeployment, c claimed, p syncPlan) [][]write {
	patch := func(want map[string]string) []write {
		changed := maps.Clone(want)
		maps.DeleteFunc(changed, func(k, v string) bool { return md.Annotations[k] == v })
		if len(changed) == 0 {
			return nil
		}
		return []write{{"patch", annotationKeys(changed)}}
	}
	var claims, deletes, evicts, starts, creates, steps, truncate []write
	for _, rev := range c.revisions.Adopt {
		claims = append(claims, write{"patch-revision", rev.Name})
	}
	switch d := c.revision; {
	case d.Create:
		claims = append(claims, write{"create-revision", d.Update.Name})
	case d.Renumber:
		claims = append(claims, write{"patch-revision", d.Update.Name})
	}
	for _, pod := range c.pods.Release {
		claims = append(claims, write{"release", pod.Name})
	}
	for _, pod := range c.pods.Adopt {
		claims = append(claims, write{"adopt", pod.Name})
	}
	for _, pod := range p.Delete {
		deletes = append(deletes, write{"delete", pod.Name})
	}
	for _, pod := range p.Evict {
		evicts = append(evicts, write{"evict", pod.Name})
	}
	for _, pod := range p.UpdateInPlace {
		starts = append(starts, write{"gateFalse", pod.Name})
	}
	for _, c := range p.Create {
		for range c.Count {
			creates = append(creates, write{"create", c.Revision})
		}
	}
	for _, st := range p.steps {
		verb := map[inplace.Step]string{inplace.StepMarkReady: "gateTrue", inplace.StepPatch: "update",
			inplace.StepFail: "gateFalse"}[st.Step]
		steps = append(steps, write{verb, st.Pod.Name})
	}
	for _, rev := range p.truncate {
		truncate = append(truncate, write{"delete-revision", rev.Name})
	}
	// The record beside the pods is written concurrently with them: its
	// phase is checked for presence only (see checkWrites).
	return [][]write{claims, patch(p.recordFirst), deletes, evicts, starts, creates, steps, patch(p.recordAfterPods), truncate,
		patch(p.record)}
}

// checkWrites fails t unless got is exactly the writes of want, the phases
// of want[:len-1] in their order and want's last phase anywhere.
func checkWrites(t *testing.T, step int, got []write, want [][]write) {
	t.Helper()
	all := slices.Concat(want...)
	key := func(w write) string { return w.verb + " " + w.target }
	named, made := map[string]int{}, map[string]int{}
	for _, w := range all {
		named[key(w)]++
	}
	for _, w := range got {
		made[key(w)]++
	}
	for _, k := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, int) bool) {
		maps.All(named)(yield)
		maps.All(made)(yield)
	}))) {
		if named[k] != made[k] {
			t.Fatalf("step %d: %q made %d times, the plan names it %d times (plan %v, made %v)", step, k, made[k], named[k], all, got)
		}
	}
	phase := map[string]int{}
	for i, ws := range want[:len(want)-1] {
		for _, w := range ws {
			phase[key(w)] = i
		}
	}
	last := -1
	for _, w := range got {
		i, ok := phase[key(w)]
		if !ok {
			continue // the concurrent record
		}
		if i < last {
			t.Fatalf("step %d: %q made after a write of a later phase: %v", step, key(w), got)
		}
		last = i
	}
}

// The planner's sequences, through decide and act with pod control and
// revision writes faked: at every step act makes exactly the writes the
// plan names, in the plan's order, and none other.
func TestActMakesTheWritesThePlanNames(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := appsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		strategy appsv1.DeploymentStrategy
		from, to int32 // replicas before and after the template change
		history  int32
		// orphans of the new template to adopt, and pods of ours the
		// selector no longer matches to release, at the start.
		orphans, unselected int
		// canary steps, when set: each step recorded before its pods move.
		canary string
	}{
		{name: "rolling maxSurge=1 maxUnavailable=1", strategy: rollingStrategy(1, 1), from: 4, to: 4, history: 10},
		{name: "rolling maxSurge=0 maxUnavailable=1, history 0", strategy: rollingStrategy(0, 1), from: 3, to: 3, history: 0},
		{name: "rolling scaled up mid-rollout", strategy: rollingStrategy(2, 0), from: 4, to: 9, history: 10},
		{name: "rolling scaled down mid-rollout", strategy: rollingStrategy(1, 1), from: 6, to: 2, history: 10},
		{name: "recreate", strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, from: 3, to: 3, history: 1},
		{name: "rolling with orphans to adopt and pods to release", strategy: rollingStrategy(1, 1), from: 3, to: 4, history: 10,
			orphans: 2, unselected: 1},
		{name: "rolling in canary steps", strategy: rollingStrategy(1, 1), from: 6, to: 6, history: 10, canary: "1, 50%, 100%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
			log := &writeLog{}
			md := &appsv1beta1.MyDeployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "web-uid", Generation: 1},
				Spec: appsv1beta1.MyDeploymentSpec{
					Replicas: ptr.To(tc.from),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "v1"}}},
					},
					RolloutSpec: appsv1beta1.RolloutSpec{Strategy: tc.strategy, RevisionHistoryLimit: ptr.To(tc.history)},
				},
			}
			owner := func() revision.Owner {
				return revision.Owner{Object: md, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment"),
					Selector: md.Spec.Selector, Template: &md.Spec.Template}
			}
			rev1, err := revision.New(owner(), 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			pods := &clusterPods{log: log, pods: map[string]*corev1.Pod{}, now: now}
			for range tc.from {
				if _, err := pods.Create(ctx, md, &md.Spec.Template, rev1); err != nil {
					t.Fatal(err)
				}
			}
			md.Spec.Template.Spec.Containers[0].Image = "v2"
			md.Spec.Replicas = ptr.To(tc.to)
			md.Annotations = map[string]string{appsv1beta1.RevisionAnnotation: "1"}
			if tc.canary != "" {
				md.Annotations[appsv1beta1.CanaryStepsAnnotation] = tc.canary
			}
			surge, _, err := rollout.StrategyFenceposts(md.Spec.Strategy, tc.from)
			if err != nil {
				t.Fatal(err)
			}
			maps.Copy(md.Annotations, rollout.Size{Replicas: tc.from, MaxReplicas: tc.from + surge}.Annotations())
			md.Status.CurrentRevision, md.Status.UpdateRevision = rev1.Name, rev1.Name
			rev2, err := revision.New(owner(), 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			owned, _ := pods.list(md.UID)
			for _, pod := range owned[:tc.unselected] {
				pod.Labels["app"] = "debugging"
			}
			for range tc.orphans {
				orphan, err := pods.Create(ctx, md, &md.Spec.Template, rev2)
				if err != nil {
					t.Fatal(err)
				}
				pods.pods[orphan.Name].OwnerReferences = nil
			}
			cl := loggingClient{fake.NewClientBuilder().WithScheme(scheme).WithObjects(md.DeepCopy(), rev1).
				WithStatusSubresource(&appsv1beta1.MyDeployment{}).Build(), log}
			r := &MyDeploymentReconciler{Client: cl, APIReader: cl, Pods: pods, Revisions: &revision.Store{Client: cl},
				Recorder: events.NewFakeRecorder(1000), objects: newObjects(0)}
			sel, err := selectorOf(md)
			if err != nil {
				t.Fatal(err)
			}
			log.take()
			for step := 1; ; step++ {
				if step > 30 {
					t.Fatal("no end to the rollout after 30 steps")
				}
				cur := &appsv1beta1.MyDeployment{}
				if err := cl.Get(ctx, client.ObjectKeyFromObject(md), cur); err != nil {
					t.Fatal(err)
				}
				owned, orphans := pods.list(md.UID)
				s := &scope{md: cur, obj: r.objects.get(cur), now: now, selector: sel, pods: owned, orphans: orphans}
				if err := r.claim(ctx, s); err != nil {
					t.Fatal(err)
				}
				p, err := r.decide(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				s.plan = p
				want := expectedWrites(cur, s.claim, p)
				if err := r.act(ctx, s); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				got := log.take()
				checkWrites(t, step, got, want)
				if owned, _ := pods.list(md.UID); !slices.ContainsFunc(owned, func(p *corev1.Pod) bool { return p.Labels[appsv1beta1.RevisionLabel] == rev1.Name }) {
					// What status says once no pod of rev1 is left.
					cur.Status.CurrentRevision, cur.Status.UpdateRevision = s.update.Name, s.update.Name
					if err := cl.Status().Update(ctx, cur); err != nil {
						t.Fatal(err)
					}
				}
				if len(got) == 0 {
					break
				}
			}
			if tc.canary != "" {
				cur := &appsv1beta1.MyDeployment{}
				if err := cl.Get(ctx, client.ObjectKeyFromObject(md), cur); err != nil {
					t.Fatal(err)
				}
				if got := cur.Annotations[appsv1beta1.CanaryStepAnnotation]; !strings.Contains(got, `"step":4`) {
					t.Errorf("canary record %q, want every step done (step 4 of 3)", got)
				}
			}
			owned, orphans := pods.list(md.UID)
			if len(owned) != int(tc.to) || len(orphans) != tc.unselected {
				t.Errorf("ended with %d pods and %d orphans, want %d and %d", len(owned), len(orphans), tc.to, tc.unselected)
			}
			var kept appsv1.ControllerRevisionList
			if err := cl.List(ctx, &kept); err != nil {
				t.Fatal(err)
			}
			if kept := len(kept.Items); kept != min(2, int(tc.history)+1) {
				t.Errorf("%d revisions kept, want %d (history %d)", kept, min(2, int(tc.history)+1), tc.history)
			}
			for _, pod := range owned {
				if pod.Labels[appsv1beta1.RevisionLabel] != rev2.Name { // the revision the first step created
					t.Errorf("pod %s of revision %s left", pod.Name, pod.Labels[appsv1beta1.RevisionLabel])
				}
			}
		})
	}
}

func rollingStrategy(surge, unavailable int) appsv1.DeploymentStrategy {
	return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt(surge)),
			MaxUnavailable: ptr.To(intstr.FromInt(unavailable))}}
}
