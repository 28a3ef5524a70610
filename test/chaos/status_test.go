package chaos

import (
	"context"

	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// statusClaim is a status a MyDeployment was written with that says
// something checkable against its pods at the same resourceVersion: the
// rollout is complete, or it has no replica.
type statusClaim struct {
	owner    types.UID
	name     string
	rv       int64
	seen     time.Time
	complete bool // observedGeneration current, every desired replica updated and available
	// abortedAvailable: the object records an abort of a revision (the
	// aborted-revision annotation) and its status claims that revision:
	// as current, or complete as the update revision (issue 32).
	abortedAvailable string
	zero             bool // status.replicas 0
	update           string
}

// statusWatcher records the status claims of the MyDeployments the driver
// tracks; checkStatuses judges them against the pod watcher's history once
// the pod watch has delivered everything up to them.
type statusWatcher struct {
	mu     sync.Mutex
	claims []statusClaim
	// last is each object's status as last seen: only an event that
	// changes it is a status write (a metadata write keeps the old status,
	// and a new object's empty status claims nothing).
	last map[types.UID]appsv1beta1.MyDeploymentStatus
}

// run watches every MyDeployment until ctx ends (resuming on a break).
func (s *statusWatcher) run(ctx context.Context, c client.WithWatch, tracked func(types.UID) bool) {
	for ctx.Err() == nil {
		wi, err := c.Watch(ctx, &appsv1beta1.MyDeploymentList{})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		for ev := range wi.ResultChan() {
			md, ok := ev.Object.(*appsv1beta1.MyDeployment)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			s.record(md, ev.Type == watch.Modified && tracked(md.UID))
		}
		wi.Stop()
	}
}

func (s *statusWatcher) record(md *appsv1beta1.MyDeployment, check bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[types.UID]appsv1beta1.MyDeploymentStatus{}
	}
	prev, seen := s.last[md.UID]
	s.last[md.UID] = md.Status
	if !check || !seen || apiequality.Semantic.DeepEqual(prev, md.Status) {
		return
	}
	st, want := md.Status, ptr.Deref(md.Spec.Replicas, 1)
	c := statusClaim{owner: md.UID, name: md.Namespace + "/" + md.Name, rv: resourceVersion(md), seen: time.Now(),
		update: st.UpdateRevision, zero: st.Replicas == 0,
		complete: st.ObservedGeneration == md.Generation && st.Replicas == want && st.UpdatedReplicas == want &&
			st.AvailableReplicas == want && st.UpdateRevision != ""}
	if r := md.Annotations[appsv1beta1.AbortedRevisionAnnotation]; r != "" &&
		(st.CurrentRevision == r || c.complete && st.UpdateRevision == r) {
		c.abortedAvailable = r
	}
	if c.complete || c.zero || c.abortedAvailable != "" {
		s.claims = append(s.claims, c)
	}
}

func (s *statusWatcher) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.claims)
}

// zeroGrace: a status computed before the sync created pods may say 0
// replicas while they exist; a pod older than this must be counted.
const zeroGrace = 10 * time.Second

// checkStatuses judges every claim against owner's pods as they were at
// the claim's resourceVersion: "complete" while an active pod of another
// revision or an unready one existed, or "0 replicas" while an active pod
// created well before ran, is a violation.
func (w *watcher) checkStatuses(s *statusWatcher) {
	s.mu.Lock()
	claims := append([]statusClaim(nil), s.claims...)
	s.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range claims {
		if c.abortedAvailable != "" {
			w.violate("%s: status at resourceVersion %d claims revision %s, which its aborted-revision annotation says was aborted",
				c.name, c.rv, c.abortedAvailable)
		}
		var old, unready []string
		running := 0
		for _, p := range w.podsAtLocked(c.owner, c.rv) {
			if !active(p) {
				continue
			}
			if c.seen.Sub(p.CreationTimestamp.Time) > zeroGrace {
				running++
			}
			rev, labelled := p.Labels[appsv1beta1.RevisionLabel]
			switch {
			case !labelled:
				// A user took its revision label away (label surgery): it
				// is of no revision, being released, as a ReplicaSet
				// releases a pod its selector stops matching; a status
				// computed a moment before the cache saw the change does
				// not count it, and a Deployment's would not either.
			case rev != c.update:
				old = append(old, p.Name+"("+rev+")")
			case !ready(p):
				unready = append(unready, p.Name)
			}
		}
		if c.complete && (len(old) > 0 || len(unready) > 0) {
			w.violate("%s: status at resourceVersion %d says the rollout is complete while %d old and %d unready pods run: old %v, unready %v",
				c.name, c.rv, len(old), len(unready), old, unready)
		}
		if c.zero && running > 0 {
			w.violate("%s: status at resourceVersion %d says 0 replicas while %d pods older than %v run",
				c.name, c.rv, running, zeroGrace)
		}
	}
}

// podsAtLocked is owner's pods as they were at resourceVersion rv.
func (w *watcher) podsAtLocked(owner types.UID, rv int64) []*corev1.Pod {
	var out []*corev1.Pod
	for uid, versions := range w.history {
		if d, gone := w.deletedAt[uid]; gone && d <= rv {
			continue
		}
		var at *corev1.Pod
		for _, p := range versions {
			if resourceVersion(p) <= rv {
				at = p
			}
		}
		if at == nil {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(at); ref != nil && ref.UID == owner {
			out = append(out, at)
		}
	}
	return out
}

// resourceVersion reads an object's resourceVersion as the number etcd's
// revisions are (what a single-etcd cluster's API server gives), 0 if not.
func resourceVersion(o metav1.Object) int64 {
	n, err := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// tracks says whether the driver tracks owner now.
func (w *watcher) tracks(owner types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.owners[owner] != nil
}
