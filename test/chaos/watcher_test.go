package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// suiteLabel marks every pod template of the suite (and the foreign pods it
// makes), so the watcher sees exactly the suite's pods.
const suiteLabel = "chaos.mydeployment.io/suite"

// bounds are what a MyDeployment's pods must respect at every moment: while
// a change from spec A to spec B is in flight they are the loosest of both,
// once the change has converged they are B's alone.
type bounds struct {
	name string
	// maxActive: never more non-terminating, unfinished pods (replicas+maxSurge).
	maxActive int
	// maxPerRevision: never more active pods of one revision (its count).
	maxPerRevision int
	// minAvailable: never fewer Ready active pods (replicas-maxUnavailable);
	// checked only when checkAvailable (RollingUpdate, once first converged).
	minAvailable   int
	checkAvailable bool
	// recreate: never two revisions among unfinished pods, terminating or not.
	recreate bool
	// minHeld: once a canary is held at its partition, never fewer active
	// pods of heldRevision (the current revision) than the partition holds.
	heldRevision string
	minHeld      int
}

// watcher records every event of the suite's pods from outside the
// operator, keeps the pods as etcd has them (one watch: events arrive in
// resourceVersion order, so each prefix is a state that really existed) and
// checks the invariants after every event.
type watcher struct {
	mu      sync.Mutex
	pods    map[types.UID]*corev1.Pod
	history map[types.UID][]*corev1.Pod // every version of every pod seen
	// deletedAt is the resourceVersion of each pod's delete event.
	deletedAt map[types.UID]int64
	owners    map[types.UID]*bounds // MyDeployment UID -> its bounds
	// mixed counts, per tracked owner, the events after which its
	// unfinished pods ran two revisions or more (a rollout's middle).
	mixed      map[types.UID]int
	events     int
	created    int
	violations []string
}

func newWatcher() *watcher {
	return &watcher{pods: map[types.UID]*corev1.Pod{}, history: map[types.UID][]*corev1.Pod{}, deletedAt: map[types.UID]int64{},
		owners: map[types.UID]*bounds{}, mixed: map[types.UID]int{}}
}

// run lists and then watches pods with the suite label in every namespace
// until ctx ends, resuming from the last resourceVersion if the watch breaks.
func (w *watcher) run(ctx context.Context, cs kubernetes.Interface, ready chan<- struct{}) error {
	sel := metav1.ListOptions{LabelSelector: suiteLabel}
	list, err := cs.CoreV1().Pods("").List(ctx, sel)
	if err != nil {
		return err
	}
	for i := range list.Items {
		w.handle(watch.Added, &list.Items[i])
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = suiteLabel
			o.AllowWatchBookmarks = true
			return cs.CoreV1().Pods("").Watch(ctx, o)
		},
	})
	if err != nil {
		return err
	}
	defer rw.Stop()
	close(ready)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return fmt.Errorf("pod watch closed")
			}
			pod, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				if ev.Type == watch.Error {
					w.violate("pod watch error: %v", ev.Object)
				}
				continue
			}
			w.handle(ev.Type, pod)
		}
	}
}

func (w *watcher) handle(t watch.EventType, pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	w.history[pod.UID] = append(w.history[pod.UID], pod)
	switch t {
	case watch.Added:
		if _, seen := w.pods[pod.UID]; !seen {
			w.created++
		}
		w.pods[pod.UID] = pod
	case watch.Modified:
		w.pods[pod.UID] = pod
	case watch.Deleted:
		delete(w.pods, pod.UID)
		w.deletedAt[pod.UID] = resourceVersion(pod)
	default:
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		w.checkLocked(ref.UID, t == watch.Added, pod)
	}
}

func active(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ownedLocked returns the pods whose controller is owner.
func (w *watcher) ownedLocked(owner types.UID) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range w.pods {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == owner {
			out = append(out, p)
		}
	}
	return out
}

// checkLocked checks owner's invariants in the current state; added says the
// event was a pod creation (then the created pod's revision must not have
// had its count already).
func (w *watcher) checkLocked(owner types.UID, added bool, trigger *corev1.Pod) {
	b := w.owners[owner]
	if b == nil {
		return // not a MyDeployment the driver tracks (or already deleted)
	}
	var nActive, nReady int
	perRev := map[string]int{}
	unfinishedRevs := map[string]bool{}
	for _, p := range w.ownedLocked(owner) {
		rev := p.Labels[appsv1beta1.RevisionLabel]
		if !finished(p) {
			unfinishedRevs[rev] = true
		}
		if !active(p) {
			continue
		}
		nActive++
		perRev[rev]++
		if ready(p) {
			nReady++
		}
	}
	if len(unfinishedRevs) > 1 {
		w.mixed[owner]++
	}
	if nActive > b.maxActive {
		w.violate("%s: %d active pods > replicas+maxSurge = %d (after %s): %s", b.name, nActive, b.maxActive, trigger.Name, w.describeLocked(owner))
	}
	if added {
		if n := perRev[trigger.Labels[appsv1beta1.RevisionLabel]]; n > b.maxPerRevision {
			w.violate("%s: pod %s created for revision %s which already had its count (%d > %d): %s",
				b.name, trigger.Name, trigger.Labels[appsv1beta1.RevisionLabel], n, b.maxPerRevision, w.describeLocked(owner))
		}
	}
	if b.checkAvailable && nReady < b.minAvailable {
		w.violate("%s: %d available pods < replicas-maxUnavailable = %d (after %s): %s", b.name, nReady, b.minAvailable, trigger.Name, w.describeLocked(owner))
	}
	if b.minHeld > 0 && perRev[b.heldRevision] < b.minHeld {
		w.violate("%s: %d active pods of revision %s < partition %d (after %s)", b.name, perRev[b.heldRevision], b.heldRevision, b.minHeld, trigger.Name)
	}
	if b.recreate && len(unfinishedRevs) > 1 {
		w.violate("%s: Recreate ran pods of %d revisions at once (after %s)", b.name, len(unfinishedRevs), trigger.Name)
	}
}

// describeLocked lists owner's pods for a violation's message: name,
// revision, and what of ready, terminating, finished and an in-place
// update's gate applies.
func (w *watcher) describeLocked(owner types.UID) string {
	var out []string
	for _, p := range w.ownedLocked(owner) {
		var marks []string
		if ready(p) {
			marks = append(marks, "ready")
		}
		if p.DeletionTimestamp != nil {
			marks = append(marks, "terminating")
		}
		if finished(p) {
			marks = append(marks, "finished")
		}
		for _, c := range p.Status.Conditions {
			if c.Type == appsv1beta1.InPlaceUpdateReadyCondition {
				marks = append(marks, "gate="+string(c.Status)+"/"+c.Reason)
			}
		}
		out = append(out, fmt.Sprintf("%s(%s %s)", p.Name, p.Labels[appsv1beta1.RevisionLabel], strings.Join(marks, ",")))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func (w *watcher) violate(format string, args ...any) {
	msg := time.Now().Format("15:04:05.000 ") + fmt.Sprintf(format, args...)
	w.violations = append(w.violations, msg)
}

// setBounds replaces owner's bounds and checks them against the pods now.
func (w *watcher) setBounds(owner types.UID, b bounds) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owners[owner] = &b
}

// untrack stops checking owner (it is being deleted).
func (w *watcher) untrack(owner types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.owners, owner)
}

// untrackNamespace stops checking every MyDeployment of ns (it is being deleted).
func (w *watcher) untrackNamespace(ns string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid, b := range w.owners {
		if strings.HasPrefix(b.name, ns+"/") {
			delete(w.owners, uid)
		}
	}
}

// mixedCount is how many events so far left owner's pods running two
// revisions or more: a rollout passed its middle if it grew, even when the
// middle lasted less than any poll interval.
func (w *watcher) mixedCount(owner types.UID) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mixed[owner]
}

// podView is what the driver needs to know about an owner's pods now.
type podView struct {
	active, ready, terminating int
	revisions                  []string       // revisions of unfinished pods, sorted
	perRevision                map[string]int // active pods of each revision
}

func (w *watcher) view(owner types.UID) podView {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := podView{perRevision: map[string]int{}}
	revs := map[string]bool{}
	for _, p := range w.ownedLocked(owner) {
		if !finished(p) {
			revs[p.Labels[appsv1beta1.RevisionLabel]] = true
		}
		switch {
		case p.DeletionTimestamp != nil:
			v.terminating++
		case active(p):
			v.active++
			v.perRevision[p.Labels[appsv1beta1.RevisionLabel]]++
			if ready(p) {
				v.ready++
			}
		}
	}
	for r := range revs {
		v.revisions = append(v.revisions, r)
	}
	sort.Strings(v.revisions)
	return v
}

// podHistory returns every version of pod uid the watch delivered.
func (w *watcher) podHistory(uid types.UID) []*corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*corev1.Pod(nil), w.history[uid]...)
}

func (w *watcher) snapshot() (events, created int, violations []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events, w.created, append([]string(nil), w.violations...)
}

// podNames maps the UID of each pod owner controls now to its name.
func (w *watcher) podNames(owner types.UID) map[types.UID]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[types.UID]string{}
	for _, p := range w.ownedLocked(owner) {
		if active(p) {
			out[p.UID] = p.Name
		}
	}
	return out
}

// podUIDs is the set of active pods owner controls now.
func (w *watcher) podUIDs(owner types.UID) map[types.UID]bool {
	out := map[types.UID]bool{}
	for uid := range w.podNames(owner) {
		out[uid] = true
	}
	return out
}
