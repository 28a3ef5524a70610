package controller

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// The chaos suite found two ways a pod cache lags behind writes that no
// expectation of ours covers (observer.vetStart). Here the lag is injected into
// the one pod cache of the manager under test, as a slow watch would leave
// it; everything else is the real API server.
var _ = Describe("MyDeployment on a pod cache that lags behind writes it did not make", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("waits, after a restart, for a pod the previous manager created and its cache does not list yet", func() {
		md := newMD(ns, "restarted", 4, "nginx:1.27")
		createReady(md)
		victim := podsOf(md)[0].Name
		stopManager()
		lag := newPodLag(victim)
		startManagerWithPodWatch(lag.wrap)
		defer func() { stopManager(); startManager() }()

		w := watchPods(md, 4, -1)
		defer w.stop()
		Consistently(func() int { return len(podsOf(md)) }, 3*time.Second, interval).Should(Equal(4),
			"the first sync since the start must not plan without the pod its cache does not list")
		lag.release()
		complete(md)
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(4), "no pod created")
	})

	It("waits for its cache to show a deleted namesake's pods released, and adopts them, creating none", func() {
		lag := newPodLag()
		stopManager()
		startManagerWithPodWatch(lag.wrap)
		defer func() { stopManager(); startManager() }()

		md := newMD(ns, "namesake", 2, "nginx:1.27")
		createReady(md)
		pods := uidsOf(md)
		// The garbage collector releases this pod before the object goes,
		// but our cache hears of it only later.
		lag.hold(podsOf(md)[0].Name)
		deleteOrphaning(md)

		w := watchPods(md, 2, -1)
		defer w.stop()
		Expect(k8sClient.Create(ctx, newMD(ns, "namesake", 2, "nginx:1.27"))).To(Succeed())
		Consistently(func() int { return len(podsOf(md)) }, 3*time.Second, interval).Should(Equal(2),
			"a pod the cache still shows controlled by the deleted namesake must not be replaced")
		lag.release()
		complete(md)
		expectAllControlledBy(get(md), pods)
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(2), "no pod created beside the adopted ones")
	})

	// Re-created over its orphans, a MyDeployment failed to adopt one of
	// them; the retry read its pods from the cache, then the orphans, and
	// the adoption of another (the failed sync's) reached the cache between
	// the two reads: in neither list, it was replaced (chaos suite, API
	// faults). The event is injected at the read of the orphans.
	It("counts a pod whose adoption reaches its cache while it reads the cache", func() {
		c := newClaimSetup(ns, "adoptrace")
		defer startManager()
		md, pc := c.md, c.pods
		fresh := func(name string) *corev1.Pod {
			pod := &corev1.Pod{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed())
			return pod
		}
		// Both orphaned, as an orphan delete leaves them; the earlier sync
		// adopted the second, and the cache still shows it an orphan.
		var orphans []*corev1.Pod
		for _, p := range podsOf(md) {
			Expect(pc.Release(ctx, md, &p)).To(Succeed())
			orphans = append(orphans, fresh(p.Name))
			Expect(c.store.Add(orphans[len(orphans)-1])).To(Succeed())
		}
		_, err := pc.Adopt(ctx, md, orphans[1], c.c.update)
		Expect(err).NotTo(HaveOccurred())
		adopted := fresh(orphans[1].Name)

		late := &eventAtRead{Indexer: c.store, key: podwatch.OrphanKey(ns), event: func() { Expect(c.store.Update(adopted)).To(Succeed()) }}
		r := c.reconciler(late)
		Expect(names(c.observe(r))).To(ConsistOf(orphans[1].Name), "read after the orphans, our pods include the one adopted meanwhile")

		Expect(c.claimPods(r)).To(Succeed())
		Expect(late.event).To(BeNil(), "the event was delivered")
		Expect(names(c.c.pods)).To(ConsistOf(orphans[0].Name, orphans[1].Name),
			"the pod adopted by the earlier sync is ours, and the other is adopted now")
		for _, p := range orphans {
			Expect(metav1.IsControlledBy(fresh(p.Name), md)).To(BeTrue())
		}
	})

	// A pod that leaves the cache (a label it selects on removed) is noted
	// as a stray before the cache drops it; a sync that read the strays
	// before the cache could find it in neither, and replace it while it
	// was still ours (chaos suite, label surgery).
	It("releases a pod that leaves its cache while it reads the cache, and does not count it", func() {
		c := newClaimSetup(ns, "leaverace")
		defer startManager()
		leaver, stayer := c.cached()
		stripped := leaver.DeepCopy()
		delete(stripped.Labels, appsv1beta1.PodTemplateHashLabel)
		Expect(k8sClient.Patch(ctx, stripped, client.MergeFrom(leaver))).To(Succeed())

		late := &eventAtRead{Indexer: c.store, key: string(c.md.UID)}
		r := c.reconciler(late)
		// The label change reaches the cache at its read of our pods, as
		// the pod index (podwatch) delivers it: noted as a stray, then dropped.
		late.event = func() {
			r.noteStray(leaver)
			Expect(c.store.Delete(leaver)).To(Succeed())
		}
		Expect(names(c.observe(r))).To(ConsistOf(stayer.Name))

		Expect(c.claimPods(r)).To(Succeed())
		Expect(late.event).To(BeNil(), "the event was delivered")
		Expect(names(c.c.pods)).To(ConsistOf(stayer.Name), "the pod that left is not counted")
		fresh := &corev1.Pod{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(leaver), fresh)).To(Succeed())
		Expect(metav1.GetControllerOf(fresh)).To(BeNil(), "and, not counted, it must not stay ours: it is released")
	})

	// Between the stray's note and the cache dropping it, the cache still
	// lists the pod with its old labels: once released, it must not count
	// (a plan could delete the pod the user took away).
	It("does not count a stray it released while its cache still lists it", func() {
		c := newClaimSetup(ns, "released")
		defer startManager()
		leaver, stayer := c.cached()
		moved := leaver.DeepCopy()
		moved.Labels = map[string]string{"app": "debugging"}
		Expect(k8sClient.Patch(ctx, moved, client.MergeFrom(leaver))).To(Succeed())

		r := c.reconciler(c.store)
		r.noteStray(leaver) // the watch event has arrived; the store has not dropped the pod yet
		Expect(c.observe(r)).To(HaveLen(2))
		Expect(c.claimPods(r)).To(Succeed())
		fresh := &corev1.Pod{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(leaver), fresh)).To(Succeed())
		Expect(metav1.GetControllerOf(fresh)).To(BeNil(), "released")
		Expect(names(c.c.pods)).To(ConsistOf(stayer.Name), "and not counted")
	})

	// The same two reads, of revisions: one adopted by an earlier sync
	// whose event arrives between them must still be counted as ours.
	It("counts a revision whose adoption reaches its cache while it reads the cache", func() {
		md := newMD(ns, "revrace", 1, "nginx:1.27")
		createReady(md)
		stopManager()
		defer startManager()
		md = get(md)
		rev := revisionsOf(md)[0].DeepCopy()
		sel, err := selectorOf(md)
		Expect(err).NotTo(HaveOccurred())
		owner := revision.Owner{Object: md, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment")}
		// Orphaned, as an orphan delete leaves it.
		orphan := rev.DeepCopy()
		orphan.OwnerReferences = nil
		Expect(k8sClient.Patch(ctx, orphan, client.MergeFrom(rev))).To(Succeed())

		reads := &eventAtList{Client: k8sClient}
		store := &revision.Store{Client: reads, APIReader: k8sClient}
		r := &MyDeploymentReconciler{APIReader: k8sClient, Revisions: store}
		o, c := &observation{md: md, now: time.Now(), selector: sel}, &claimed{}
		// What a sync read before (observe read the revisions, until the fix).
		before, err := store.List(ctx, ns, sel, md.UID)
		Expect(err).NotTo(HaveOccurred())
		Expect(before).To(BeEmpty())
		// An earlier sync's adoption reaches the cache at the next read.
		reads.event = func() {
			_, err := (&revision.Store{Client: k8sClient}).Adopt(ctx, owner, orphan)
			Expect(err).NotTo(HaveOccurred())
		}

		Expect(r.claimer().readRevisions(ctx, o, c)).To(Succeed())
		Expect(reads.event).To(BeNil(), "the event was delivered")
		Expect(named(c.revisions, rev.Name)).NotTo(BeNil(), "the revision adopted meanwhile is ours")
	})
})

// claimSetup is a MyDeployment with two ready pods and no manager
// running, and what a test of the pod claim needs beside it: a hand-fed pod
// index (store), an observation as observe leaves it before reading pods,
// and claims with the update revision decided.
type claimSetup struct {
	md    *appsv1beta1.MyDeployment
	pods  *podcontrol.Real
	store toolscache.Indexer
	o     *observation
	c     *claimed
}

// newClaimSetup stops the manager; the caller restarts it.
func newClaimSetup(ns, name string) *claimSetup {
	md := newMD(ns, name, 2, "nginx:1.27")
	createReady(md)
	stopManager()
	md = get(md)
	sel, err := selectorOf(md)
	Expect(err).NotTo(HaveOccurred())
	rev := revisionsOf(md)[0]
	return &claimSetup{md: md, pods: &podcontrol.Real{Client: k8sClient},
		store: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{podwatch.ByController: podwatch.ControllerKeys}),
		o:     &observation{md: md, now: time.Now(), selector: sel},
		c:     &claimed{update: &rev}}
}

// cached puts the two pods, as the API server has them, in the store.
func (c *claimSetup) cached() (first, second *corev1.Pod) {
	pods := podsOf(c.md)
	Expect(pods).To(HaveLen(2))
	for i := range pods {
		Expect(c.store.Add(&pods[i])).To(Succeed())
	}
	return &pods[0], &pods[1]
}

// reconciler reads pods through idx, and writes them to the API server.
func (c *claimSetup) reconciler(idx toolscache.Indexer) *MyDeploymentReconciler {
	r := &MyDeploymentReconciler{APIReader: k8sClient, Pods: c.pods, PodIndex: podwatch.IndexOf(idx),
		objects: newObjects(0)}
	c.o.obj = r.objects.get(c.md)
	return r
}

// claimPods claims the pods as a sync does: the strays read around the
// cache, the claim, and its writes.
func (c *claimSetup) claimPods(r *MyDeploymentReconciler) error {
	if err := r.claimer().readStrays(ctx, c.o, c.c); err != nil {
		return err
	}
	claimPods(c.o, c.c)
	return r.actor().writePodClaims(ctx, &syncPlan{md: c.md, obj: c.o.obj, claims: c.c, update: c.c.update}, &outcome{})
}

// observe reads the pods as observe does.
func (c *claimSetup) observe(r *MyDeploymentReconciler) []*corev1.Pod {
	Expect(r.observer().readPods(c.o)).To(Succeed())
	return c.o.pods
}

// eventAtList is a client whose next List, once event is set, first runs
// event (a write its cache would show from then on).
type eventAtList struct {
	client.Client
	event func()
}

func (c *eventAtList) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if c.event != nil {
		e := c.event
		c.event = nil
		e()
	}
	return c.Client.List(ctx, list, opts...)
}

// eventAtRead is a cache's index that, once event is set, receives it
// (runs event) at its next read for key, before answering.
type eventAtRead struct {
	toolscache.Indexer
	key   string
	event func()
}

func (i *eventAtRead) ByIndex(name, key string) ([]any, error) {
	if key == i.key && i.event != nil {
		e := i.event
		i.event = nil
		e()
	}
	return i.Indexer.ByIndex(name, key)
}

// podLag makes a pod cache lag: the list leaves out, and the watch holds
// back, every event of the pods it holds until release, which delivers the
// held events in order.
type podLag struct {
	mu       sync.Mutex
	held     map[string]bool
	released chan struct{}
}

func newPodLag(names ...string) *podLag {
	l := &podLag{held: map[string]bool{}, released: make(chan struct{})}
	for _, n := range names {
		l.held[n] = true
	}
	return l
}

func (l *podLag) hold(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held[name] = true
}

func (l *podLag) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.held)
	close(l.released)
}

func (l *podLag) holds(obj runtime.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[pod.Name]
}

func (l *podLag) wrap(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	return lagLW{lw: lw, lag: l}
}

type lagLW struct {
	lw  toolscache.ListerWatcher
	lag *podLag
}

func (w lagLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return w.ListWithContext(context.Background(), opts)
}

func (w lagLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return w.WatchWithContext(context.Background(), opts)
}

func (w lagLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := toolscache.ToListerWithContext(w.lw).ListWithContext(ctx, opts)
	if list, ok := obj.(*corev1.PodList); ok && err == nil {
		kept := list.Items[:0]
		for i := range list.Items {
			if !w.lag.holds(&list.Items[i]) {
				kept = append(kept, list.Items[i])
			}
		}
		list.Items = kept
	}
	return obj, err
}

func (w lagLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	inner, err := toolscache.ToWatcherWithContext(w.lw).WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &lagWatch{inner: inner, result: make(chan watch.Event), done: make(chan struct{})}
	go lagLoop(out, w.lag)
	return out, nil
}

// lagWatch is the watch lagLW returns: lagLoop relays inner's events to result.
type lagWatch struct {
	inner  watch.Interface
	result chan watch.Event
	done   chan struct{}
	stop   sync.Once
}

func (w *lagWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *lagWatch) Stop() {
	w.stop.Do(func() { close(w.done) })
	w.inner.Stop()
}

// send passes e on; false if the watch was stopped.
func (w *lagWatch) send(e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.done:
		return false
	}
}

// lagLoop relays the events of pods lag does not hold, and the held ones
// once lag is released.
func lagLoop(w *lagWatch, lag *podLag) {
	defer close(w.result)
	var held []watch.Event
	released := lag.released
	for {
		select {
		case e, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			if lag.holds(e.Object) {
				held = append(held, e)
				continue
			}
			if !w.send(e) {
				return
			}
		case <-released:
			for _, e := range held {
				if !w.send(e) {
					return
				}
			}
			held, released = nil, nil
		case <-w.done:
			return
		}
	}
}
