package main

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// objectLabel names the benchmark object a pod belongs to, whichever party
// made it (raw client, ReplicaSet or MyDeployment).
const objectLabel = "bench.mydeployment.io/object"

// tracker follows every pod of a party's namespace through a watch, in the
// API server's order, and keeps per-object counts. While bounds are set it
// checks the RollingUpdate invariants on every state it sees.
type tracker struct {
	mu   sync.Mutex
	pods map[types.UID]podState
	objs map[string]*counts

	// lastNew and lastReady are when the newest pod appeared and the last
	// pod became ready, since the last mark (where a scenario's time goes).
	lastNew, lastReady time.Time

	// created and deleted count, since the last mark, the pods that
	// appeared and the pods that stopped being live.
	created, deleted int

	bounds     *bounds
	violations int
	examples   []string
}

type podState struct {
	object, image      string
	live, ready, valid bool
}

// counts are one object's pods: live (not terminating), ready among them,
// and live pods by image.
type counts struct {
	live, ready int
	byImage     map[string]int
	violating   bool
}

// bounds are the RollingUpdate invariants: never more than maxLive pods
// (replicas + maxSurge; an in-place update: replicas), never fewer than
// minReady available (replicas - maxUnavailable; minReadySeconds is 0, so
// available means ready).
type bounds struct{ maxLive, minReady int }

func newTracker() *tracker {
	return &tracker{pods: map[types.UID]podState{}, objs: map[string]*counts{}}
}

func stateOf(pod *corev1.Pod) podState {
	s := podState{object: pod.Labels[objectLabel], valid: true}
	if len(pod.Spec.Containers) > 0 {
		s.image = pod.Spec.Containers[0].Image
	}
	s.live = pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded
	if s.live {
		gateFalse := false
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				s.ready = true
			}
			if c.Type == inPlaceGate && c.Status == corev1.ConditionFalse {
				gateFalse = true
			}
		}
		// From the moment its in-place update starts a pod is unavailable,
		// even while the kubelet still reports it Ready.
		s.ready = s.ready && !gateFalse
	}
	return s
}

// inPlaceGate is the condition behind the readiness gate of pods created in
// update-mode InPlaceIfPossible: False while the pod is updated in place.
const inPlaceGate = corev1.PodConditionType(appsv1beta1.InPlaceUpdateReadyCondition)

func (t *tracker) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj, false) },
		UpdateFunc: func(_, obj any) { t.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			t.observe(obj, true)
		},
	}
}

func (t *tracker) observe(obj any, deleted bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	next := podState{}
	if !deleted {
		next = stateOf(pod)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, known := t.pods[pod.UID]
	if !known && !deleted {
		t.lastNew = time.Now()
		t.created++
	}
	if known && prev.live && !next.live {
		t.deleted++
	}
	if next.ready && !prev.ready {
		t.lastReady = time.Now()
	}
	t.apply(prev, -1)
	t.apply(next, +1)
	if deleted {
		delete(t.pods, pod.UID)
	} else {
		t.pods[pod.UID] = next
	}
	for _, name := range []string{prev.object, next.object} {
		if c := t.objs[name]; c != nil && name != "" {
			t.check(name, c)
		}
	}
}

func (t *tracker) apply(s podState, d int) {
	if !s.valid || s.object == "" {
		return
	}
	c := t.objs[s.object]
	if c == nil {
		c = &counts{byImage: map[string]int{}}
		t.objs[s.object] = c
	}
	if s.live {
		c.live += d
		c.byImage[s.image] += d
		if s.ready {
			c.ready += d
		}
	}
}

func (t *tracker) check(name string, c *counts) {
	if t.bounds == nil {
		c.violating = false
		return
	}
	bad := c.live > t.bounds.maxLive || c.ready < t.bounds.minReady
	if bad && !c.violating {
		t.violations++
		if len(t.examples) < 10 {
			t.examples = append(t.examples, fmt.Sprintf("%s: %d live pods (max %d), %d ready (min %d)",
				name, c.live, t.bounds.maxLive, c.ready, t.bounds.minReady))
		}
	}
	c.violating = bad
}

// checkInvariants starts (b non-nil) or stops checking; it returns the
// breaches seen since the last start.
func (t *tracker) checkInvariants(b *bounds) (int, []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ex := t.violations, t.examples
	t.bounds, t.violations, t.examples = b, 0, nil
	for name, c := range t.objs {
		t.check(name, c)
	}
	return v, ex
}

// all reports whether every one of objects has exactly want live pods, all
// ready and all of image (any image when empty).
func (t *tracker) all(objects []string, want int, image string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range objects {
		c := t.objs[name]
		if c == nil || c.live != want || c.ready != want || (image != "" && c.byImage[image] != want) {
			return false
		}
	}
	return true
}

// summary is a short line for progress logs.
func (t *tracker) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	live, ready := 0, 0
	for _, c := range t.objs {
		live += c.live
		ready += c.ready
	}
	return fmt.Sprintf("%d pods seen, %d live, %d ready", len(t.pods), live, ready)
}

// settled reports whether every pod seen is live (none terminating).
func (t *tracker) settled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.pods {
		if !s.live {
			return false
		}
	}
	return true
}

// mark starts a new timeline; since reports, relative to start, when the
// newest pod appeared and the last one became ready.
func (t *tracker) mark() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastNew, t.lastReady = time.Time{}, time.Time{}
	t.created, t.deleted = 0, 0
}

// churn reports how many pods appeared, and how many stopped being live
// (deleted, terminating or finished), since the last mark.
func (t *tracker) churn() (created, deleted int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.created, t.deleted
}

func (t *tracker) since(start time.Time) (lastNew, lastReady float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.lastNew.IsZero() {
		lastNew = t.lastNew.Sub(start).Seconds()
	}
	if !t.lastReady.IsZero() {
		lastReady = t.lastReady.Sub(start).Seconds()
	}
	return lastNew, lastReady
}
