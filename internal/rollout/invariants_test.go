package rollout

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// observed is the test's own reading of an Input, computed independently of
// the planner's internals so checkPlan does not trust what it checks.
type observed struct {
	replicas, maxSurge, minAvailable int
	active, updated, old             int
	available, updatedAvailable      int
	revisions                        map[string]int  // active pods per revision, moving ones (below) the update revision's
	labels                           map[string]bool // the revisions active pods are labelled with
	creatable                        map[string]bool // revisions pods may be created from
	update                           string          // the update revision
	recreate, saturated              bool
	maxBurst                         int
	oldUnfinished                    int
	finished                         map[*corev1.Pod]bool // not terminating
	input                            map[*corev1.Pod]bool
	// held is the partition's target for old pods (0: none); specified
	// counts active labelled pods, updatedKeep and oldKeep the unlabelled.
	held, specified      int
	updatedKeep, oldKeep int
	labelled             map[*corev1.Pod]bool // active, labelled (or on a draining node)
	// draining are the active pods on a draining node (Input.DrainingNodes,
	// not under Recreate): labelled too.
	draining map[*corev1.Pod]bool
	// movable are the active unlabelled old pods that can move in place
	// (their revision in Input.InPlace, the gate on them).
	movable map[*corev1.Pod]bool
	// moving are the active pods labelled with an old revision whose
	// in-place update began and may go on (a rolling step, their revision
	// in Input.InPlace, the gate False with reason InPlaceUpdate): they
	// count as update-revision pods.
	moving map[*corev1.Pod]bool
}

// hasGate and failedInPlace read the in-place readiness gate and its
// condition directly, not through the planner's helpers.
func hasGate(p *corev1.Pod) bool {
	for _, g := range p.Spec.ReadinessGates {
		if g.ConditionType == appsv1beta1.InPlaceUpdateReadyCondition {
			return true
		}
	}
	return false
}

func gateCondition(p *corev1.Pod) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == appsv1beta1.InPlaceUpdateReadyCondition {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func failedInPlace(p *corev1.Pod) bool {
	c := gateCondition(p)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == "InPlaceUpdateFailed"
}

// movingInPlace says an old-labelled pod is on its way to the update
// revision in place, read from the input directly.
func movingInPlace(in Input, p *corev1.Pod) bool {
	c := gateCondition(p)
	return !in.Paused && in.Strategy != Recreate && revisionOf(p) != in.UpdateRevision && hasGate(p) &&
		slices.Contains(in.InPlace, revisionOf(p)) && c != nil && c.Status == corev1.ConditionFalse && c.Reason == "InPlaceUpdate"
}

func observe(in Input) observed {
	o := observed{finished: map[*corev1.Pod]bool{}, input: map[*corev1.Pod]bool{}, revisions: map[string]int{}, labels: map[string]bool{}, labelled: map[*corev1.Pod]bool{},
		movable: map[*corev1.Pod]bool{}, moving: map[*corev1.Pod]bool{}, draining: map[*corev1.Pod]bool{},
		creatable: map[string]bool{in.UpdateRevision: true}, update: in.UpdateRevision, recreate: in.Strategy == Recreate, maxBurst: int(in.MaxBurst)}
	if o.maxBurst <= 0 {
		o.maxBurst = DefaultMaxBurst
	}
	for _, r := range in.Revisions {
		o.creatable[r] = true
	}
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
		if !done && !gone && movingInPlace(in, p) {
			isNew = true
			o.moving[p] = true
		}
		switch {
		case done && !gone:
			o.finished[p] = true
		case !done && !gone:
			o.active++
			o.labels[revisionOf(p)] = true
			if isNew {
				o.revisions[in.UpdateRevision]++
			} else {
				o.revisions[revisionOf(p)]++
			}
			if isNew && IsAvailable(p, in.MinReadySeconds, in.Now) {
				o.updatedAvailable++
			}
			onDraining := !o.recreate && p.Spec.NodeName != "" && in.DrainingNodes[p.Spec.NodeName]
			if onDraining {
				o.draining[p] = true
			}
			label := p.Labels[appsv1beta1.SpecifiedDeleteLabel] == "true" || failedInPlace(p) || onDraining
			if label {
				o.specified++
				o.labelled[p] = true
			}
			switch {
			case isNew && !label:
				o.updated++
				o.updatedKeep++
			case isNew:
				o.updated++
			case !label:
				o.old++
				o.oldKeep++
				if hasGate(p) && slices.Contains(in.InPlace, revisionOf(p)) {
					o.movable[p] = true
				}
			default:
				o.old++
			}
			if IsAvailable(p, in.MinReadySeconds, in.Now) {
				o.available++
			}
		}
	}
	o.saturated = o.updated == o.replicas && o.updatedAvailable == o.replicas
	if p := min(max(int(in.Partition), 0), o.replicas); p > 0 && !o.recreate && in.CurrentRevision != "" && in.CurrentRevision != in.UpdateRevision {
		o.held = min(p, o.oldKeep)
		if slices.Contains(in.Revisions, in.CurrentRevision) {
			o.held = p
		}
	}
	return o
}

// isOld says an active pod is on the old side: labelled with an old
// revision and not on its way to the update revision in place (a moving
// pod counts as the update revision's, as observe counts it).
func (o observed) isOld(p *corev1.Pod) bool {
	return revisionOf(p) != o.update && !o.moving[p]
}

// drainSurge is the surge a rolling step may use: maxSurge, and at least
// one while a pod is on a draining node.
func (o observed) drainSurge() int {
	if len(o.draining) > 0 {
		return max(o.maxSurge, 1)
	}
	return o.maxSurge
}

// allowed is Deployment's allowed size for proportional scaling.
func (o observed) allowed() int {
	if o.replicas == 0 {
		return 0
	}
	return o.replicas + o.maxSurge
}

// checkPlan asserts every promise Compute documents for this input, whatever
// the strategy. It is shared by the table, simulation and fuzz tests.
func checkPlan(t testing.TB, in Input, p Plan) {
	t.Helper()
	if in.TerminationComplete {
		// The opt-in only cuts the creates of the plan without it: its own
		// promises checked, every other is that plan's.
		off := in
		off.TerminationComplete = false
		q := Compute(off)
		checkAfterTermination(t, in, p, q)
		in, p = off, q
	}
	maxWait := time.Duration(max(in.MinReadySeconds, 0)) * time.Second
	drainHold := false // the aborted revision's active pods stay while traffic drains (AbortDrain)
	if in.aborting() {
		// An abort is the rolling step towards the stable revision: its
		// promises are those of that input, less the aborted revision's
		// removals while traffic drains, due again then.
		if drainHold = in.AbortDrain.After(in.Now); drainHold {
			maxWait = max(maxWait, in.AbortDrain.Sub(in.Now))
			for _, pod := range slices.Concat(p.Delete, p.Evict, p.UpdateInPlace) {
				if in.takesTraffic(pod) {
					t.Fatalf("abort: pod %s of the aborted revision removed or moved before its traffic drained: %s", pod.Name, describe(p))
				}
			}
		}
		in = in.towardsStable()
	}
	if in.Canary != nil {
		// A canary plan keeps every promise of a partition plan, with the
		// partition its step chose (beside waves, the larger of the step's
		// and the wave's); it may wait for a timed pause.
		in.Partition = 0
		if p.Waves != nil {
			in.Partition = int32(p.Waves.Held)
		}
		if p.Canary != nil {
			in.Partition = max(in.Partition, p.Canary.Held)
			maxWait = max(maxWait, p.Canary.wait)
			checkCanary(t, in, p.Canary)
		}
	}
	o := observe(in)

	if p.RequeueAfter < 0 || p.RequeueAfter > maxWait {
		t.Fatalf("RequeueAfter %v outside [0, max(minReadySeconds=%d, canary wait)]", p.RequeueAfter, in.MinReadySeconds)
	}

	// Create: positive counts, each revision once, only revisions pods can be
	// created from, old ones only if they have active pods; at most MaxBurst.
	create, createOld := 0, 0
	createdRevs := map[string]bool{}
	for _, c := range p.Create {
		switch {
		case c.Count <= 0:
			t.Fatalf("non-positive Create count: %s", describe(p))
		case createdRevs[c.Revision]:
			t.Fatalf("revision %q twice in Create: %s", c.Revision, describe(p))
		case !o.creatable[c.Revision]:
			t.Fatalf("Create names revision %q, not one pods can be created from: %s", c.Revision, describe(p))
		case c.Revision != in.UpdateRevision && o.revisions[c.Revision] == 0 && !(o.held > 0 && c.Revision == in.CurrentRevision):
			t.Fatalf("Create adds to old revision %q, which has no active pod: %s", c.Revision, describe(p))
		}
		createdRevs[c.Revision] = true
		create += int(c.Count)
		if c.Revision != in.UpdateRevision {
			createOld += int(c.Count)
		}
	}
	if create > o.maxBurst || p.Removes() > o.maxBurst {
		t.Fatalf("more than MaxBurst=%d creates or deletes: %s", o.maxBurst, describe(p))
	}
	cut := create == o.maxBurst || p.Removes() == o.maxBurst
	if len(p.Evict) > 0 && !in.RespectPDB {
		t.Fatalf("Evict without RespectPDB: %s", describe(p))
	}

	// Delete, then Evict: unique pods from the input, none terminating;
	// finished, old, new order within each.
	seen := map[*corev1.Pod]bool{}
	var delActive, delOld, delNew, delAvailable int
	var removedOldKeep, removedAvailableKeep, removedAvailableDraining int
	removedAvailable := map[bool]int{} // unlabelled available pods removed, by isOld
	stage := 0                         // 0 finished, 1 old, 2 new
	for i, d := range slices.Concat(p.Delete, p.Evict) {
		if i == len(p.Delete) {
			stage = 1
			if o.finished[d] {
				t.Fatalf("Evict has finished pod %q: %s", d.Name, describe(p))
			}
		}
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
			if o.isOld(d) {
				s = 1
				delOld++
			} else {
				delNew++
			}
			if IsAvailable(d, in.MinReadySeconds, in.Now) {
				delAvailable++
				if o.draining[d] {
					removedAvailableDraining++
				}
				if !o.labelled[d] {
					removedAvailableKeep++
					removedAvailable[s == 1]++
				}
			}
			if s == 1 && !o.labelled[d] {
				removedOldKeep++
			}
		}
		if s < stage {
			t.Fatalf("Delete/Evict order must be finished, old, new; got %v / %v", names(p.Delete), names(p.Evict))
		}
		stage = s
	}
	for f := range o.finished {
		if !seen[f] && len(p.Delete) < o.maxBurst {
			t.Fatalf("finished pod %q not deleted: %s", f.Name, describe(p))
		}
	}
	after := o.active + create - delActive
	for _, d := range p.Drained {
		if !o.draining[d] || !seen[d] {
			t.Fatalf("Drained has pod %q, not a removed pod on a draining node: %s", d.Name, describe(p))
		}
	}

	// UpdateInPlace: unique movable old pods from the input, none removed
	// too; each available one spends the availability budget a removal
	// would.
	inPlaceAvailable := 0
	for _, u := range p.UpdateInPlace {
		switch {
		case !o.movable[u]:
			t.Fatalf("UpdateInPlace has pod %q, not an active unlabelled old pod that can move in place: %s", u.Name, describe(p))
		case seen[u]:
			t.Fatalf("UpdateInPlace has pod %q twice, or also removed: %s", u.Name, describe(p))
		}
		seen[u] = true
		if IsAvailable(u, in.MinReadySeconds, in.Now) {
			inPlaceAvailable++
		}
	}
	// MovingInPlace: exactly the pods on their way in place.
	if len(p.MovingInPlace) != len(o.moving) {
		t.Fatalf("MovingInPlace has %d pods, %d are on their way in place: %s", len(p.MovingInPlace), len(o.moving), describe(p))
	}
	for _, m := range p.MovingInPlace {
		if !o.moving[m] {
			t.Fatalf("MovingInPlace has pod %q, not on its way in place: %s", m.Name, describe(p))
		}
	}
	if len(p.UpdateInPlace) > o.maxBurst {
		t.Fatalf("more than MaxBurst=%d in-place updates: %s", o.maxBurst, describe(p))
	}
	if len(p.UpdateInPlace) > 0 && (in.Paused || o.recreate) {
		t.Fatalf("in-place updates while paused or under Recreate: %s", describe(p))
	}

	// What the pods are sized for, and when it must be recorded.
	sized := Size{Replicas: int32(o.replicas), MaxReplicas: int32(o.replicas + o.maxSurge)}
	changed := in.SizedFor == nil || *in.SizedFor != p.SizedFor
	if p.RecordSize && !changed {
		t.Fatalf("RecordSize without a change from %+v: %s", in.SizedFor, describe(p))
	}
	if len(o.labels) > 1 && changed && !p.RecordSize {
		t.Fatalf("several revisions run and SizedFor changed from %+v, yet RecordSize is false: %s", in.SizedFor, describe(p))
	}
	if !cut && p.SizedFor != sized {
		t.Fatalf("SizedFor %+v, want %+v (the plan is not cut by MaxBurst): %s", p.SizedFor, sized, describe(p))
	}

	scalingEvent := !in.Paused && !o.recreate && in.SizedFor != nil && int(in.SizedFor.Replicas) != o.replicas
	oldOnly := len(o.revisions) == 1 && o.updated == 0
	proportionalStep := p.Reason == ReasonProportionalScaleUp || p.Reason == ReasonProportionalScaleDown
	if proportionalStep && (!scalingEvent || o.held > 0) {
		t.Fatalf("proportional scaling without a scaling event, or partitioned: %s", describe(p))
	}
	partitionScale := p.Reason == ReasonPartitionScaleDown
	if partitionScale && (!scalingEvent || o.held == 0 || create > 0 || len(p.Evict) > 0) {
		t.Fatalf("partition scale-down without a scaling event or partition, or creating or evicting: %s", describe(p))
	}
	heldCreate := o.held > 0 && !in.Paused && createOld == createdOf(p, in.CurrentRevision)
	if createOld > 0 && !proportionalStep && !(in.Paused && !o.recreate) && !heldCreate {
		t.Fatalf("old-revision pods created outside scaling and partition: %s", describe(p))
	}
	if (proportionalStep || in.Paused) && len(p.Evict) > 0 {
		t.Fatalf("a scale evicts: %s", describe(p))
	}
	// The partition: a step (not paused) never takes the unlabelled old
	// pods below the held share; a labelled pod goes before any available
	// unlabelled pod of its side (old, updated), scaling proportionally aside.
	if o.held > 0 && !in.Paused && o.oldKeep-removedOldKeep < min(o.oldKeep, o.held) {
		t.Fatalf("partition: %d unlabelled old pods, %d removed, held share %d: %s", o.oldKeep, removedOldKeep, o.held, describe(p))
	}
	if !in.Paused && !proportionalStep {
		for pod := range o.labelled {
			if isOld := o.isOld(pod); !seen[pod] && removedAvailable[isOld] > 0 && !cut {
				t.Fatalf("labelled pod %q kept while %d available unlabelled pod(s) of its side go: %s", pod.Name, removedAvailable[isOld], describe(p))
			}
		}
	}

	switch {
	case in.Paused && o.recreate:
		wantCreate := max(0, o.replicas-o.active)
		if o.oldUnfinished > 0 {
			wantCreate = 0
		}
		if !cut && (create != wantCreate || delActive != max(0, o.active-o.replicas)) {
			t.Fatalf("paused recreate: want create=%d and %d deletions, got %s", wantCreate, max(0, o.active-o.replicas), describe(p))
		}
		if delNew > 0 && delOld < o.old {
			t.Fatalf("paused scale-down deleted an update-revision pod while old ones survive: %s", describe(p))
		}
	case in.Paused && len(o.revisions) <= 1:
		if !cut && after != o.replicas {
			t.Fatalf("paused, one revision: want %d active pods after the plan, got %d: %s", o.replicas, after, describe(p))
		}
	case in.Paused && o.saturated:
		if create != 0 || delNew != 0 || !cut && delOld != o.old {
			t.Fatalf("paused and saturated: want exactly the %d old pods deleted, got %s", o.old, describe(p))
		}
	case in.Paused:
		checkProportional(t, o, p, after, create, cut)
	case proportionalStep && oldOnly:
		if !cut && after != o.replicas {
			t.Fatalf("scaling event, one old revision: want %d active pods after the plan, got %d: %s", o.replicas, after, describe(p))
		}
		if createOld != create {
			t.Fatalf("scaling event, one old revision: created pods of another: %s", describe(p))
		}
	case proportionalStep:
		if o.saturated || len(o.revisions) < 2 {
			t.Fatalf("proportional scaling with %d active revisions, saturated=%v: %s", len(o.revisions), o.saturated, describe(p))
		}
		checkProportional(t, o, p, after, create, cut)
	case o.recreate && o.oldUnfinished > 0:
		if create != 0 {
			t.Fatalf("recreate created %d pods while %d old pods may run", create, o.oldUnfinished)
		}
		if !cut && (delOld != o.old || delNew != max(0, o.updated-o.replicas)) {
			t.Fatalf("recreate: want all %d old and %d surplus new pods deleted, got %s", o.old, max(0, o.updated-o.replicas), describe(p))
		}
	case partitionScale:
		if after < o.replicas {
			t.Fatalf("partition scale-down below replicas: %s", describe(p))
		}
	case !o.recreate && (o.old > 0 || o.specified > 0 || o.held > 0):
		createNew := create - createOld
		// With maxUnavailable 0 (no partition), pods that move in place
		// are made room for by surge pods of the update revision.
		inPlaceSurge := 0
		if o.minAvailable == o.replicas && o.held == 0 && len(o.movable) > 0 {
			inPlaceSurge = 1
		}
		if create > 0 && o.active+create > o.replicas+o.drainSurge() ||
			createNew > 0 && o.updatedKeep+createNew > o.replicas-o.held+inPlaceSurge || createOld > 0 && o.oldKeep+createOld > o.held {
			t.Fatalf("rolling: create %d breaks surge or shares: active=%d updated=%d replicas=%d maxSurge=%d held=%d: %s",
				create, o.active, o.updated, o.replicas, o.maxSurge, o.held, describe(p))
		}
		atHold := o.held > 0 && o.specified == 0 && o.updatedKeep == o.replicas-o.held && o.oldKeep == o.held && o.active == o.replicas
		if atHold != (p.Reason == ReasonPartitionHeld) {
			t.Fatalf("rolling: at the partition's hold %v, reason %s", atHold, describe(p))
		}
		if atHold {
			break
		}
		if budget := max(0, o.available-o.minAvailable); delAvailable+inPlaceAvailable > budget {
			t.Fatalf("rolling: deleted %d and updated in place %d available pods, only %d allowed (available=%d minAvailable=%d): %s",
				delAvailable, inPlaceAvailable, budget, o.available, o.minAvailable, describe(p))
		}
		// Old pods that will move in place are not replaced by new ones
		// (without a partition, every old pod leaves).
		if leaving := len(o.movable); o.held == 0 && inPlaceSurge == 0 && createNew > 0 && leaving > 0 &&
			o.updatedKeep+createNew+leaving > o.replicas {
			t.Fatalf("rolling: created %d pods although %d old pods will move in place (updated=%d, target %d): %s",
				createNew, leaving, o.updatedKeep, o.replicas-o.held, describe(p))
		}
		// Drain: with no rollout under way, an available pod on a draining
		// node goes only once its replacement is available: the drain's
		// removals alone keep Replicas available. (Other removals of the
		// step, a specified-delete pod's, spend maxUnavailable as they
		// would without a drain; a rollout step may take a draining pod
		// instead of another old pod, within maxUnavailable: both checked
		// above.)
		if removedAvailableDraining > 0 && o.old == 0 && o.held == 0 && o.available-removedAvailableDraining < o.replicas {
			t.Fatalf("drain: %d available pods on draining nodes removed of %d available, below replicas=%d: %s",
				removedAvailableDraining, o.available, o.replicas, describe(p))
		}
		if o.available == o.active && create == 0 && delActive == 0 && len(p.UpdateInPlace) == 0 && !cut && !drainHold {
			t.Fatalf("rolling: every pod is available yet no progress: %s", describe(p))
		}
	default:
		wantCreate, wantDelete := max(0, o.replicas-o.updated), max(0, o.updated-o.replicas)
		if o.updated <= o.replicas {
			// Labelled pods are removed first and replaced once gone
			// (Recreate): never more than replicas active, even if a
			// removal fails.
			wantCreate, wantDelete = o.replicas-o.updated, o.updated-o.updatedKeep
		}
		if !cut && (create != wantCreate || delActive != wantDelete) {
			t.Fatalf("scale: want create=%d delete=%d, got %s", wantCreate, wantDelete, describe(p))
		}
	}
}

// createdOf is how many pods p creates of rev.
func createdOf(p Plan, rev string) int {
	for _, c := range p.Create {
		if c.Revision == rev {
			return int(c.Count)
		}
	}
	return 0
}

// checkProportional asserts Deployment's proportional scaling: the active
// pods move towards the allowed size without passing it, growing exactly to
// it (or by MaxBurst) when a revision with active pods can be created from.
func checkProportional(t testing.TB, o observed, p Plan, after, create int, cut bool) {
	t.Helper()
	allowed := o.allowed()
	switch {
	case o.active < allowed:
		canGrow := false
		for rev := range o.revisions {
			canGrow = canGrow || o.creatable[rev]
		}
		if after > allowed || after < o.active || canGrow && !cut && after != allowed || canGrow && create == 0 {
			t.Fatalf("proportional scale-up from %d towards %d ends at %d: %s", o.active, allowed, after, describe(p))
		}
	case o.active > allowed:
		if create != 0 || after < allowed || after >= o.active && !cut {
			t.Fatalf("proportional scale-down from %d towards %d ends at %d: %s", o.active, allowed, after, describe(p))
		}
	default:
		if len(p.Create) != 0 || after != o.active {
			t.Fatalf("proportional scaling at the allowed size %d acted: %s", allowed, describe(p))
		}
	}
}
