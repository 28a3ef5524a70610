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
	"k8s.io/apimachinery/pkg/api/equality"
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
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/updatemode"
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

// clusterPods is a fake pod control over an in-memory set of pods, and
// the kubelet of those pods: what it creates runs at once, Ready unless it
// has the in-place gate (then once the gate is True); what it deletes or
// evicts is gone; a gate False takes the pod out of Ready, and a pod
// updated in place runs the new template at once, unless it is stuck.
// Every call is logged; created names the pods created since the last
// take.
type clusterPods struct {
	log     *writeLog
	mu      sync.Mutex
	pods    map[string]*corev1.Pod
	seq     int
	now     time.Time
	created []string
	// stuck: pods whose containers never report a new template.
	stuck map[string]bool
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
	ready := corev1.ConditionTrue
	if inplace.HasGate(pod) {
		ready = corev1.ConditionFalse // until its gate is True
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready,
		LastTransitionTime: metav1.NewTime(c.now.Add(-time.Hour))}}
	runs(pod)
	c.pods[pod.Name] = pod
	c.created = append(c.created, pod.Name)
	return pod.DeepCopy(), nil
}

// runs has pod's containers report its spec's images, ready.
func runs(pod *corev1.Pod) {
	pod.Status.ContainerStatuses = nil
	for _, ctr := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses,
			corev1.ContainerStatus{Name: ctr.Name, Image: ctr.Image, Ready: true})
	}
}

// setCondition sets pod's condition of type t to status, since now if it changes.
func setCondition(pod *corev1.Pod, t corev1.PodConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) {
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == t {
			if c.Status != status {
				c.LastTransitionTime = metav1.NewTime(now)
			}
			c.Status, c.Reason, c.Message = status, reason, message
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason,
		Message: message, LastTransitionTime: metav1.NewTime(now)})
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

// SetGate logs "gateTrue", "gateFalse" or, for a failed update, "gateFailed".
func (c *clusterPods) SetGate(_ context.Context, _ *appsv1beta1.MyDeployment, pod *corev1.Pod, status corev1.ConditionStatus,
	reason, message string) error {
	verb := "gate" + string(status)
	if reason == inplace.ReasonFailed {
		verb = "gateFailed"
	}
	c.log.add(verb, pod.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	stored := c.pods[pod.Name]
	if stored == nil {
		return nil
	}
	setCondition(stored, inplace.Gate, status, reason, message, c.now)
	// The kubelet: Ready only with the gate True and the containers ready.
	ready := corev1.ConditionFalse
	if status == corev1.ConditionTrue && inplace.SpecMatches(stored, &corev1.PodTemplateSpec{Spec: stored.Spec}) &&
		stored.Status.ContainerStatuses[0].Image == stored.Spec.Containers[0].Image {
		ready = corev1.ConditionTrue
	}
	setCondition(stored, corev1.PodReady, ready, "", "", c.now)
	return nil
}

// UpdateInPlace relabels the pod as rev's, with target's containers, which
// its kubelet runs at once unless the pod is stuck.
func (c *clusterPods) UpdateInPlace(_ context.Context, _ *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision,
	target *corev1.PodTemplateSpec, change *inplace.Change) error {
	c.log.add("update", pod.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	stored := c.pods[pod.Name]
	if stored == nil {
		return nil
	}
	stored.Labels[appsv1beta1.RevisionLabel] = rev.Name
	stored.Labels[appsv1beta1.PodTemplateHashLabel] = rev.Labels[revision.HashLabel]
	if change != nil {
		for k, v := range change.Labels {
			if v == nil {
				delete(stored.Labels, k)
			} else {
				stored.Labels[k] = *v
			}
		}
	}
	stored.Spec.Containers = slices.Clone(target.Spec.Containers)
	if !c.stuck[pod.Name] {
		runs(stored)
	}
	return nil
}

// list returns the pods owner controls, and the orphans.
func (c *clusterPods) list(owner types.UID) (owned, orphans []*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pods {
		switch ref := metav1.GetControllerOfNoCopy(p); {
		case ref == nil:
			orphans = append(orphans, p.DeepCopy())
		case ref.UID == owner:
			owned = append(owned, p.DeepCopy())
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
func expectedWrites(md *appsv1beta1.MyDeployment, p *syncPlan) [][]write {
	c := p.claims
	patch := func(want map[string]string) []write {
		changed := maps.Clone(want)
		maps.DeleteFunc(changed, func(k, v string) bool { return md.Annotations[k] == v })
		if len(changed) == 0 {
			return nil
		}
		return []write{{"patch", annotationKeys(changed)}}
	}
	var claims, deletes, evicts, starts, creates, steps, truncate []write
	for _, rev := range c.revisionClaims.Adopt {
		claims = append(claims, write{"patch-revision", rev.Name})
	}
	switch d := c.revision; {
	case d.Create:
		claims = append(claims, write{"create-revision", d.Update.Name})
	case d.Renumber:
		claims = append(claims, write{"patch-revision", d.Update.Name})
	}
	for _, pod := range c.podClaims.Release {
		claims = append(claims, write{"release", pod.Name})
	}
	for _, pod := range c.podClaims.Adopt {
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
			inplace.StepFail: "gateFailed"}[st.Step]
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

// writeVerbs are the writes of each kind of the write table (writeRules),
// as the fakes log them: every kind must be made by some sequence below,
// but the status, which is written after act, from its outcome (the
// envtests prove it: writeStatus).
var writeVerbs = map[writeKind][]string{
	writeCreate:      {"create"},
	writeDelete:      {"delete"},
	writeEvict:       {"evict"},
	writeGateStart:   {"gateFalse"},
	writeStep:        {"update", "gateTrue", "gateFailed"},
	writeAnnotations: {"patch"},
	writeStatus:      nil,
	writeRevision:    {"create-revision", "delete-revision"},
}

// actCase is a rollout sequence of TestActMakesTheWritesThePlanNames.
type actCase struct {
	name     string
	strategy appsv1.DeploymentStrategy
	from, to int32 // replicas before and after the template change
	history  int32
	// orphans of the new template to adopt, and pods of ours the
	// selector no longer matches to release, at the start.
	orphans, unselected int
	// canary steps, when set: each step recorded before its pods move.
	canary string
	// optIn are opt-in annotations; stuck, pods (of the first ones) whose
	// kubelet never runs a template updated in place.
	optIn map[string]string
	stuck int
	// made are writes the sequence must make (verbs as the fakes log them).
	made []string
}

// The planner's sequences, through decide and act with pod control and
// revision writes faked: at every step act makes exactly the writes the
// plan names, in the plan's order, and none other; together they make
// every kind of write of the write table but the status.
func TestActMakesTheWritesThePlanNames(t *testing.T) {
	inPlace := map[string]string{appsv1beta1.UpdateModeAnnotation: appsv1beta1.UpdateModeInPlaceIfPossible}
	made := map[string]bool{}
	for _, tc := range []actCase{
		{name: "rolling maxSurge=1 maxUnavailable=1", strategy: rollingStrategy(1, 1), from: 4, to: 4, history: 10,
			made: []string{"create", "delete"}},
		{name: "rolling maxSurge=0 maxUnavailable=1, history 0", strategy: rollingStrategy(0, 1), from: 3, to: 3, history: 0},
		{name: "rolling scaled up mid-rollout", strategy: rollingStrategy(2, 0), from: 4, to: 9, history: 10},
		{name: "rolling scaled down mid-rollout", strategy: rollingStrategy(1, 1), from: 6, to: 2, history: 10},
		{name: "recreate", strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, from: 3, to: 3, history: 1},
		{name: "rolling with orphans to adopt and pods to release", strategy: rollingStrategy(1, 1), from: 3, to: 4, history: 10,
			orphans: 2, unselected: 1},
		{name: "rolling in canary steps", strategy: rollingStrategy(1, 1), from: 6, to: 6, history: 10, canary: "1, 50%, 100%"},
		{name: "rolling through evictions (respect-pdb)", strategy: rollingStrategy(1, 1), from: 4, to: 3, history: 10,
			optIn: map[string]string{appsv1beta1.RespectPDBAnnotation: "true"}, made: []string{"evict"}},
		{name: "in place, scaled up", strategy: rollingStrategy(1, 1), from: 4, to: 5, history: 10, optIn: inPlace,
			made: []string{"gateFalse", "update", "gateTrue"}},
		{name: "in place, one pod stuck: it fails and is replaced", strategy: rollingStrategy(0, 1), from: 3, to: 3, history: 10,
			optIn: inPlace, stuck: 1, made: []string{"gateFalse", "update", "gateTrue", "gateFailed", "delete", "create"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range runActSequence(t, tc) {
				made[w.verb] = true
			}
		})
	}
	if len(writeVerbs) != len(writeRules) {
		t.Fatalf("the write table has %d kinds, writeVerbs names %d: name the new kind's writes", len(writeRules), len(writeVerbs))
	}
	for kind, verbs := range writeVerbs {
		for _, verb := range verbs {
			if !made[verb] {
				t.Errorf("no sequence made a %q write (write kind %d)", verb, kind)
			}
		}
	}
}

// runActSequence runs tc's rollout, a sync (claim, decide, act) a step,
// checking each step's writes against its plan, until a step writes
// nothing and no in-place update is under way; it returns every write.
func runActSequence(t *testing.T, tc actCase) []write {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	log := &writeLog{}
	md, rev1, pods := startActCase(t, tc, log, now)
	rev2, err := revision.New(revision.Owner{Object: md, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment"),
		Selector: md.Spec.Selector, Template: &md.Spec.Template}, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	cl := loggingClient{fake.NewClientBuilder().WithScheme(actScheme(t)).WithObjects(md.DeepCopy(), rev1).
		WithStatusSubresource(&appsv1beta1.MyDeployment{}).Build(), log}
	r := &MyDeploymentReconciler{Client: cl, APIReader: cl, Pods: pods, Revisions: &revision.Store{Client: cl},
		Recorder: events.NewFakeRecorder(1000), objects: newObjects(0)}
	parts := map[string]optin.Part{updatemode.Name: &updatemode.Memo{}} // kept across the syncs, as the manager keeps it
	log.take()
	var all []write
	for step := 1; ; step++ {
		if step > 40 {
			t.Fatal("no end to the rollout after 40 steps")
		}
		cur := &appsv1beta1.MyDeployment{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(md), cur); err != nil {
			t.Fatal(err)
		}
		owned, orphans := pods.list(md.UID)
		o := observeSpec(cur, r.objects.get(cur), now)
		if o.invalid != nil {
			t.Fatal(o.invalid)
		}
		o.pods, o.orphans = owned, orphans
		c, err := r.claimer().claim(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := decide(o, c, parts, r.inPlaceTimeout())
		if err != nil {
			t.Fatal(err)
		}
		want := expectedWrites(cur, p)
		pods.created = nil
		observed := cur.DeepCopy()
		out, err := r.actor().act(ctx, p)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if !equality.Semantic.DeepEqual(cur, observed) {
			t.Fatalf("step %d: act modified the observation's object: annotations %v, resourceVersion %s; observed %v, %s", step, cur.Annotations, cur.ResourceVersion, observed.Annotations, observed.ResourceVersion)
		}
		if p.inPlace {
			// Each new pod's gate is marked True once it is created.
			for _, name := range pods.created {
				want[5] = append(want[5], write{"gateTrue", name})
			}
		}
		got := log.take()
		checkWrites(t, step, got, want)
		all = append(all, got...)
		if owned, _ := pods.list(md.UID); !slices.ContainsFunc(owned, func(p *corev1.Pod) bool { return p.Labels[appsv1beta1.RevisionLabel] == rev1.Name }) {
			// What status says once no pod of rev1 is left.
			written := out.object(cur).DeepCopy() // its resourceVersion as act's record writes left it
			written.Status.CurrentRevision, written.Status.UpdateRevision = c.update.Name, c.update.Name
			if err := cl.Status().Update(ctx, written); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) == 0 && p.inPlaceAfter == 0 {
			break
		}
		now = now.Add(30 * time.Second) // a stuck update times out after DefaultInPlaceTimeout
		pods.mu.Lock()
		pods.now = now
		pods.mu.Unlock()
	}
	checkActEnd(t, tc, cl, md, pods, rev2)
	for _, verb := range tc.made {
		if !slices.ContainsFunc(all, func(w write) bool { return w.verb == verb }) {
			t.Errorf("no %q write in the sequence", verb)
		}
	}
	return all
}

// actScheme is the scheme of the fake API server.
func actScheme(t *testing.T) *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := appsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// startActCase is tc's MyDeployment, its pods of its first revision (and
// orphans of the next), and its template changed to the next.
func startActCase(t *testing.T, tc actCase, log *writeLog, now time.Time) (*appsv1beta1.MyDeployment, *appsv1.ControllerRevision, *clusterPods) {
	ctx := context.Background()
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
	pods := &clusterPods{log: log, pods: map[string]*corev1.Pod{}, now: now, stuck: map[string]bool{}}
	template := md.Spec.Template.DeepCopy()
	if tc.optIn[appsv1beta1.UpdateModeAnnotation] != "" {
		inplace.WithGate(&template.Spec)
	}
	for i := range tc.from {
		pod, err := pods.Create(ctx, md, template, rev1)
		if err != nil {
			t.Fatal(err)
		}
		if inplace.HasGate(pod) {
			if err := pods.SetGate(ctx, md, pod, corev1.ConditionTrue, inplace.ReasonReady, ""); err != nil {
				t.Fatal(err)
			}
		}
		if int(i) < tc.stuck {
			pods.stuck[pod.Name] = true
		}
	}
	md.Spec.Template.Spec.Containers[0].Image = "v2"
	md.Spec.Replicas = ptr.To(tc.to)
	md.Annotations = map[string]string{appsv1beta1.RevisionAnnotation: "1"}
	maps.Copy(md.Annotations, tc.optIn)
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
		pods.pods[pod.Name].Labels["app"] = "debugging"
	}
	for range tc.orphans {
		orphan, err := pods.Create(ctx, md, template, rev2)
		if err != nil {
			t.Fatal(err)
		}
		pods.pods[orphan.Name].OwnerReferences = nil
	}
	return md, rev1, pods
}

// checkActEnd checks where tc's sequence ended: every pod ready and of
// rev2, the orphans released, the canary steps done, the history kept.
func checkActEnd(t *testing.T, tc actCase, cl client.Client, md *appsv1beta1.MyDeployment, pods *clusterPods, rev2 *appsv1.ControllerRevision) {
	t.Helper()
	ctx := context.Background()
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
		if !slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}) {
			t.Errorf("pod %s is not ready", pod.Name)
		}
	}
}

func rollingStrategy(surge, unavailable int) appsv1.DeploymentStrategy {
	return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt(surge)),
			MaxUnavailable: ptr.To(intstr.FromInt(unavailable))}}
}
