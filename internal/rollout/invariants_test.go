package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// observed is the test's own reading of an Input, computed independently of
// the planner's internals so checkPlan does not trust what it checks.
type observed struct {
	replicas, maxSurge, minAvailable int
	active, updated, old             int
	available, updatedAvailable      int
	revisions                        map[string]bool // of active pods
	oldUnfinished                    int
	finished                         map[*corev1.Pod]bool // not terminating
	input                            map[*corev1.Pod]bool
}

func observe(in Input) observed {
	o := observed{finished: map[*corev1.Pod]bool{}, input: map[*corev1.Pod]bool{}, revisions: map[string]bool{}}
	o.replicas = max(int(in.Replicas), 0)
	o.maxSurge = max(int(in.MaxSurge), 0)
	u := max(int(in.MaxUnavailable), 0)
	if o.maxSurge == 0 && u == 0 {
		u = 1
	}
	o.minAvailable = o.replicas - min(u, o.replicas)
	for _, p := range in.Pods {
		if p == nil {
			continue
		}
		o.input[p] = true
		done := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		gone := p.DeletionTimestamp != nil
		isNew := revisionOf(p) == in.UpdateRevision
		if !isNew && !done {
			o.oldUnfinished++
		}
		switch {
		case done && !gone:
			o.finished[p] = true
		case !done && !gone:
			o.active++
			o.revisions[revisionOf(p)] = true
			if isNew && IsAvailable(p, in.MinReadySeconds, in.Now) {
				o.updatedAvailable++
			}
			if isNew {
				o.updated++
			} else {
				o.old++
			}
			if IsAvailable(p, in.MinReadySeconds, in.Now) {
				o.available++
			}
		}
	}
	return o
}

// checkPlan asserts every promise Compute documents for this input, whatever
// the strategy. It is shared by the table, simulation and fuzz tests.
func checkPlan(t testing.TB, in Input, p Plan) {
	t.Helper()
	o := observe(in)

	if p.Create < 0 {
		t.Fatalf("negative Create: %s", describe(p))
	}
	if p.RequeueAfter < 0 || p.RequeueAfter > time.Duration(max(in.MinReadySeconds, 0))*time.Second {
		t.Fatalf("RequeueAfter %v outside [0, minReadySeconds=%d]", p.RequeueAfter, in.MinReadySeconds)
	}

	// Delete: unique pods from the input, none terminating; finished, old, new order.
	seen := map[*corev1.Pod]bool{}
	var delActive, delOld, delNew, delAvailable int
	stage := 0 // 0 finished, 1 old, 2 new
	for _, d := range p.Delete {
		switch {
		case d == nil:
			t.Fatalf("nil pod in Delete: %s", describe(p))
		case !o.input[d]:
			t.Fatalf("Delete has pod %q not in the input", d.Name)
		case seen[d]:
			t.Fatalf("Delete has pod %q twice: %s", d.Name, describe(p))
		case d.DeletionTimestamp != nil:
			t.Fatalf("Delete has already terminating pod %q", d.Name)
		}
		seen[d] = true
		s := 0
		if !o.finished[d] {
			delActive++
			s = 2
			if revisionOf(d) != in.UpdateRevision {
				s = 1
				delOld++
			} else {
				delNew++
			}
			if IsAvailable(d, in.MinReadySeconds, in.Now) {
				delAvailable++
			}
		}
		if s < stage {
			t.Fatalf("Delete order must be finished, old, new; got %v", names(p.Delete))
		}
		stage = s
	}
	for f := range o.finished {
		if !seen[f] {
			t.Fatalf("finished pod %q not deleted: %s", f.Name, describe(p))
		}
	}

	create := int(p.Create)
	switch {
	case in.Paused:
		wantCreate := max(0, o.replicas-o.active)
		if in.Recreate && o.oldUnfinished > 0 {
			wantCreate = 0
		}
		// Deployment's scale(): a rolling update caught mid-way keeps its surge.
		allowed := o.replicas
		saturated := o.updated == o.replicas && o.updatedAvailable == o.replicas
		if !in.Recreate && len(o.revisions) > 1 && o.replicas > 0 && !saturated {
			allowed += o.maxSurge
		}
		if create != wantCreate || delActive != max(0, o.active-allowed) {
			t.Fatalf("paused: want create=%d and %d deletions, got %s", wantCreate, max(0, o.active-allowed), describe(p))
		}
		if delNew > 0 && delOld < o.old {
			t.Fatalf("paused scale-down deleted an update-revision pod while old ones survive: %s", describe(p))
		}
	case in.Recreate && o.oldUnfinished > 0:
		if create != 0 {
			t.Fatalf("recreate created %d pods while %d old pods may run", create, o.oldUnfinished)
		}
		if delOld != o.old || delNew != max(0, o.updated-o.replicas) {
			t.Fatalf("recreate: want all %d old and %d surplus new pods deleted, got %s", o.old, max(0, o.updated-o.replicas), describe(p))
		}
	case !in.Recreate && o.old > 0:
		if create > 0 && (o.active+create > o.replicas+o.maxSurge || o.updated+create > o.replicas) {
			t.Fatalf("rolling: create %d breaks surge: active=%d updated=%d replicas=%d maxSurge=%d", create, o.active, o.updated, o.replicas, o.maxSurge)
		}
		if budget := max(0, o.available-o.minAvailable); delAvailable > budget {
			t.Fatalf("rolling: deleted %d available pods, only %d allowed (available=%d minAvailable=%d): %s",
				delAvailable, budget, o.available, o.minAvailable, describe(p))
		}
		if o.available == o.active && create == 0 && delActive == 0 {
			t.Fatalf("rolling: every pod is available yet no progress: %s", describe(p))
		}
	default:
		if create != max(0, o.replicas-o.updated) || delActive != max(0, o.updated-o.replicas) {
			t.Fatalf("scale: want create=%d delete=%d, got %s", max(0, o.replicas-o.updated), max(0, o.updated-o.replicas), describe(p))
		}
	}
}
