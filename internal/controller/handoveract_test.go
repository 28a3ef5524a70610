package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/handover"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// The hand-over's writes, as TestActMakesTheWritesThePlanNames checks a
// sync's: a migration of a Deployment mid-rollout driven through
// readAndPlan and actHandOver over a fake API server (no
// kube-controller-manager: the driver plays the plugin and the garbage
// collector), checking at every sync that act makes exactly the writes
// the plan names, in its order; then the same migration with each of
// those writes failing in turn, before or after it lands (a manager killed
// there), and with a revision's name taken by another object's: each
// ends as the first does.

// handOverPods is pod control over the fake API server (podcontrol.Real)
// that logs every pod write: a hand-over makes adoptions only, and
// checkWrites fails on any other.
type handOverPods struct {
	podcontrol.Interface
	log *writeLog
}

func (p handOverPods) Adopt(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	p.log.add("adopt", pod.Name)
	return p.Interface.Adopt(ctx, owner, pod, rev)
}

func (p handOverPods) Create(ctx context.Context, owner *appsv1beta1.MyDeployment, t *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	p.log.add("create", rev.Name)
	return p.Interface.Create(ctx, owner, t, rev)
}

func (p handOverPods) Delete(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	p.log.add("delete", pod.Name)
	return p.Interface.Delete(ctx, owner, pod)
}

func (p handOverPods) Evict(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	p.log.add("evict", pod.Name)
	return p.Interface.Evict(ctx, owner, pod)
}

func (p handOverPods) Release(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	p.log.add("release", pod.Name)
	return p.Interface.Release(ctx, owner, pod)
}

func (p handOverPods) SetGate(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, status corev1.ConditionStatus,
	reason, message string) error {
	p.log.add("gate"+string(status), pod.Name)
	return p.Interface.SetGate(ctx, owner, pod, status, reason, message)
}

func (p handOverPods) UpdateInPlace(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision,
	target *corev1.PodTemplateSpec, change *inplace.Change) error {
	p.log.add("update", pod.Name)
	return p.Interface.UpdateInPlace(ctx, owner, pod, rev, target, change)
}

// failingClient fails the fail-th write through it (counting from 1; 0:
// none), before it reaches the API server or, landed, after: a manager
// killed before or after that write.
type failingClient struct {
	client.Client
	fail   int32
	landed bool
	writes *atomic.Int32
}

var errKilled = errors.New("injected: the manager was killed at this write")

func (c failingClient) write(do func() error) error {
	if c.writes.Add(1) != c.fail {
		return do()
	}
	if c.landed {
		if err := do(); err != nil {
			return err
		}
	}
	return errKilled
}

func (c failingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.write(func() error { return c.Client.Create(ctx, obj, opts...) })
}

func (c failingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.write(func() error { return c.Client.Patch(ctx, obj, patch, opts...) })
}

func (c failingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.write(func() error { return c.Client.Delete(ctx, obj, opts...) })
}

// handOverWorld is one migration on a fake API server: Deployment web
// mid-rollout, its ReplicaSet h1 (web:1, revision 1) and h2 (web:2, the
// MyDeployment's template, revision 2) with two pods each, and the
// MyDeployment made from it (handover.FromDeployment).
type handOverWorld struct {
	base   client.Client
	r      *MyDeploymentReconciler
	log    *writeLog
	events *events.FakeRecorder
	md     *appsv1beta1.MyDeployment
	dep    *appsv1.Deployment
	uids   []types.UID
	// lagged: the cache has once not listed an adopted pod.
	lagged bool
}

// newHandOverWorld builds the world, its writes failing as fail says (its
// zero: none) and extra objects in it from the start.
func newHandOverWorld(t *testing.T, fail failingClient, extra ...client.Object) *handOverWorld {
	t.Helper()
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "dep-uid",
		Annotations: map[string]string{appsv1beta1.ChangeCauseAnnotation: "web:2"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: webTemplate("web:2", ""), Strategy: rollingStrategy(1, 0)}}
	md := handover.FromDeployment(dep)
	md.UID = "md-uid"
	objects := append([]client.Object{dep, md}, extra...)
	w := &handOverWorld{md: md, dep: dep, log: &writeLog{}, events: events.NewFakeRecorder(100)}
	for i, image := range []string{"web:1", "web:2"} {
		rs, pods := replicaSetOf(dep, fmt.Sprintf("h%d", i+1), image, i+1)
		objects = append(objects, rs)
		for _, p := range pods {
			objects = append(objects, p)
			w.uids = append(w.uids, p.UID)
		}
	}
	w.base = fake.NewClientBuilder().WithScheme(actScheme(t)).WithObjects(objects...).
		WithStatusSubresource(&appsv1beta1.MyDeployment{}).Build()
	fail.Client, fail.writes = w.base, &atomic.Int32{}
	cl := loggingClient{fail, w.log}
	w.r = &MyDeploymentReconciler{Client: cl, APIReader: cl, Pods: handOverPods{&podcontrol.Real{Client: fail}, w.log},
		Revisions: &revision.Store{Client: cl}, Recorder: w.events, objects: newObjects(0)}
	return w
}

func webTemplate(image, hash string) corev1.PodTemplateSpec {
	labels := map[string]string{"app": "web"}
	if hash != "" {
		labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}}}
}

// replicaSetOf is d's ReplicaSet of hash, numbered n, with two pods.
func replicaSetOf(d *appsv1.Deployment, hash, image string, n int) (*appsv1.ReplicaSet, []*corev1.Pod) {
	t := webTemplate(image, hash)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: handover.ReplicaSetName(d.Name, hash),
		UID: types.UID("rs-" + hash), Labels: t.Labels, Annotations: map[string]string{handover.DeploymentRevisionAnnotation: fmt.Sprint(n)},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: t.Labels}, Template: t}}
	var pods []*corev1.Pod
	for i := range 2 {
		name := fmt.Sprintf("%s-%d", rs.Name, i)
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: name, UID: types.UID(name),
			Labels:          t.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Spec: t.Spec})
	}
	return rs, pods
}

// syncResult is one hand-over sync of the driver: its plan (nil: none
// made), its outcome, its error and the writes it made.
type syncResult struct {
	o    *observation
	p    *handOverPlan
	out  *outcome
	err  error
	made []write
}

// run syncs w's MyDeployment until its hand-over ends, calling check after
// each sync; between syncs it plays the plugin and the garbage collector
// (plugin).
func (w *handOverWorld) run(t *testing.T, check func(step int, s syncResult)) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for step := 1; ; step++ {
		if step > 20 {
			t.Fatal("no end to the hand-over after 20 syncs")
		}
		cur := w.get(t)
		if _, ok := cur.Annotations[appsv1beta1.AdoptFromAnnotation]; !ok {
			return
		}
		o := observeSpec(cur, w.r.objects.get(cur), now)
		if o.invalid != nil {
			t.Fatal(o.invalid)
		}
		o.pods = w.cached(t)
		h := w.r.handOverSync()
		s := syncResult{o: o}
		if s.p, s.err = h.readAndPlan(ctx, o); s.err == nil {
			s.out, s.err = h.actHandOver(ctx, s.p)
		}
		s.made = w.log.take()
		check(step, s)
		w.plugin(t)
		now = now.Add(2 * time.Second)
	}
}

func (w *handOverWorld) get(t *testing.T) *appsv1beta1.MyDeployment {
	t.Helper()
	cur := &appsv1beta1.MyDeployment{}
	if err := w.base.Get(context.Background(), client.ObjectKeyFromObject(w.md), cur); err != nil {
		t.Fatal(err)
	}
	return cur
}

func (w *handOverWorld) pods(t *testing.T) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := w.base.List(context.Background(), &list, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// cached are the pods the MyDeployment's cache lists: those it controls,
// but once, the first time there are some, the last of them (a cache
// behind the adoptions).
func (w *handOverWorld) cached(t *testing.T) []*corev1.Pod {
	var owned []*corev1.Pod
	for _, p := range w.pods(t) {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == w.md.UID {
			owned = append(owned, p.DeepCopy())
		}
	}
	if len(owned) > 0 && !w.lagged {
		w.lagged = true
		return owned[:len(owned)-1]
	}
	return owned
}

// plugin plays kubectl mydeployment migrate and the garbage collector:
// once the record names both ReplicaSets, the Deployment is deleted
// (--cascade=orphan: its ReplicaSets released); a sync later, the
// ReplicaSets (their pods released).
func (w *handOverWorld) plugin(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	md := w.get(t)
	if !strings.Contains(md.Annotations[appsv1beta1.AdoptRevisionsAnnotation], `"h2"`) ||
		!strings.Contains(md.Annotations[appsv1beta1.AdoptRevisionsAnnotation], `"h1"`) {
		return
	}
	var rss appsv1.ReplicaSetList
	if err := w.base.List(ctx, &rss, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if err := w.base.Delete(ctx, w.dep.DeepCopy()); err == nil {
		for i := range rss.Items {
			w.orphan(t, &rss.Items[i])
		}
		return
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	for i := range rss.Items {
		if err := w.base.Delete(ctx, &rss.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range w.pods(t) {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "ReplicaSet" {
			w.orphan(t, &p)
		}
	}
}

// orphan removes obj's owner references, as the garbage collector does.
func (w *handOverWorld) orphan(t *testing.T, obj client.Object) {
	t.Helper()
	obj.SetOwnerReferences(nil)
	if err := w.base.Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// expectedHandOverWrites is what act must write for p: each in the phase
// actHandOver makes it in, phases in order (the last, empty: nothing is
// written beside another phase).
func expectedHandOverWrites(p *handOverPlan) [][]write {
	var created, history, record, adopted, finished []write
	for _, n := range p.Revisions {
		created = append(created, write{"create-revision", n.Revision.Name})
	}
	if c := p.claims; c.update != nil {
		for _, rev := range c.revisionClaims.Adopt {
			history = append(history, write{"patch-revision", rev.Name})
		}
		switch d := c.revision; {
		case d.Create:
			history = append(history, write{"create-revision", d.Update.Name})
		case d.Renumber:
			history = append(history, write{"patch-revision", d.Update.Name})
		}
	}
	if p.Record != nil {
		record = []write{{"patch", appsv1beta1.AdoptRevisionsAnnotation}}
	}
	for _, a := range p.Adopt {
		adopted = append(adopted, write{"adopt", a.Pod.Name})
	}
	if p.Finish {
		finished = []write{{"patch", appsv1beta1.AdoptFromAnnotation + "," + appsv1beta1.AdoptRevisionsAnnotation}}
	}
	return [][]write{created, history, record, adopted, finished, nil}
}

// checkHandOverEnd fails t unless w's migration ended as it must: the
// annotations gone, every pod the same (none created or deleted), the
// MyDeployment's, in the revision of its template (numbered as its
// ReplicaSet) with that revision's hash, one revision per template; one
// HandedOver event, but when the finish's reply was lost (lostFinish).
func checkHandOverEnd(t *testing.T, w *handOverWorld, lostFinish bool) {
	t.Helper()
	md := w.get(t)
	if _, ok := md.Annotations[appsv1beta1.AdoptRevisionsAnnotation]; ok {
		t.Errorf("the record is left: %v", md.Annotations)
	}
	revs, err := w.r.Revisions.List(context.Background(), "ns", nil, md.UID)
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]*appsv1.ControllerRevision{}
	for _, rev := range revs {
		tmpl, err := revision.Template(rev)
		if err != nil {
			t.Fatal(err)
		}
		image := tmpl.Spec.Containers[0].Image
		if images[image] != nil || (image == "web:1") != (rev.Revision == 1) {
			t.Errorf("revision %s of %s numbered %d: one revision per template, numbered as its ReplicaSet", rev.Name, image, rev.Revision)
		}
		images[image] = rev
	}
	var uids []types.UID
	for _, p := range w.pods(t) {
		uids = append(uids, p.UID)
		rev := images[p.Spec.Containers[0].Image]
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != md.UID || rev == nil ||
			p.Labels[appsv1beta1.RevisionLabel] != rev.Name || p.Labels[appsv1beta1.PodTemplateHashLabel] != rev.Labels[revision.HashLabel] {
			t.Errorf("pod %s (%s) not adopted into its template's revision: %v, %v", p.Name, p.Spec.Containers[0].Image, p.OwnerReferences, p.Labels)
		}
	}
	slices.Sort(uids)
	if !slices.Equal(uids, w.uids) {
		t.Errorf("pods %v, want the same pods %v", uids, w.uids)
	}
	handedOver := 0
	for len(w.events.Events) > 0 {
		if e := <-w.events.Events; strings.Contains(e, appsv1beta1.EventHandedOver) {
			handedOver++
		}
	}
	if handedOver != 1 && !(lostFinish && handedOver == 0) {
		t.Errorf("%d HandedOver events, want 1", handedOver)
	}
}

// Every sync of a migration makes exactly the writes its plan names, in
// its order; together they make each kind of write a hand-over makes.
func TestActMakesTheHandOverWritesThePlanNames(t *testing.T) {
	w := newHandOverWorld(t, failingClient{})
	var all []write
	w.run(t, func(step int, s syncResult) {
		if s.err != nil {
			t.Fatalf("step %d: %v", step, s.err)
		}
		checkWrites(t, step, s.made, expectedHandOverWrites(s.p))
		t.Logf("step %d: wait %q, made %v", step, s.p.Wait, s.made)
		all = append(all, s.made...)
	})
	checkHandOverEnd(t, w, false)
	for _, want := range []write{{"create-revision", ""}, {"patch", appsv1beta1.AdoptRevisionsAnnotation}, {"adopt", ""},
		{"patch", appsv1beta1.AdoptFromAnnotation + "," + appsv1beta1.AdoptRevisionsAnnotation}} {
		if !slices.ContainsFunc(all, func(w write) bool { return w.verb == want.verb && strings.HasPrefix(w.target, want.target) }) {
			t.Errorf("no %v write in the migration: %v", want, all)
		}
	}
}

// A manager killed at any write of a migration, before the write or
// after it landed: the next syncs go on from what they read, and the
// migration ends as it does unbroken.
func TestHandOverResumesAfterAnyWrite(t *testing.T) {
	var writes int32
	counted := newHandOverWorld(t, failingClient{})
	counted.run(t, func(_ int, s syncResult) { writes += int32(len(s.made)) })
	for fail := int32(1); fail <= writes; fail++ {
		for _, landed := range []bool{false, true} {
			t.Run(fmt.Sprintf("write %d of %d, landed %v", fail, writes, landed), func(t *testing.T) {
				w := newHandOverWorld(t, failingClient{fail: fail, landed: landed})
				failed, lostFinish := 0, false
				w.run(t, func(step int, s syncResult) {
					switch {
					case errors.Is(s.err, errKilled):
						failed++
						lostFinish = landed && s.p.Finish
					case s.err != nil:
						t.Fatalf("step %d: %v", step, s.err)
					}
				})
				if failed != 1 {
					t.Errorf("%d syncs failed, want the one killed", failed)
				}
				checkHandOverEnd(t, w, lostFinish)
			})
		}
	}
}

// A revision's name taken by another object's (a hash collision): act
// creates it under the next collision count, and the record, the pods and
// the status name it as written.
func TestHandOverNamesTheRevisionsAsWritten(t *testing.T) {
	first := newHandOverWorld(t, failingClient{})
	tmpl := webTemplate("web:1", "")
	planned, err := revision.New(revision.Owner{Object: first.md, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment"),
		Selector: first.md.Spec.Selector, Template: &tmpl}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	taken := planned.DeepCopy()
	taken.OwnerReferences[0].UID, taken.OwnerReferences[0].Name = "another-uid", "another"
	taken.Data = runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"web","image":"web:9"}]}}}}`)}
	w := newHandOverWorld(t, failingClient{}, taken)
	renamed := false
	w.run(t, func(step int, s syncResult) {
		if s.err != nil {
			t.Fatalf("step %d: %v", step, s.err)
		}
		if len(s.p.Revisions) == 0 {
			return
		}
		renamed = true
		record := w.get(t).Annotations[appsv1beta1.AdoptRevisionsAnnotation]
		v := countedOf(s.o, s.p.claims, s.out)
		for _, rev := range []*appsv1.ControllerRevision{v.update, v.current} {
			if !strings.Contains(record, `"`+rev.Name+`"`) {
				t.Errorf("step %d: the status names revision %s, the record says %s", step, rev.Name, record)
			}
		}
		if strings.Contains(record, planned.Name) {
			t.Errorf("step %d: the record %s names the revision taken, %s", step, record, planned.Name)
		}
	})
	if !renamed {
		t.Fatal("no sync created a revision")
	}
	checkHandOverEnd(t, w, false)
}
