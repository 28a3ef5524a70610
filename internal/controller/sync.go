package controller

import (
	"context"
)

// Event reasons of the controller (pod writes have podcontrol's).
const (
	EventScalingRevision = "ScalingRevision"
	EventNewRevision     = "NewRevision"
)

// sync brings the revisions and pods of o's MyDeployment towards its
// spec, in three phases that each return a value the next takes: claim
// reads what the ownership claims need and decides them (claimed), decide
// plans every write from the observation and the claims alone (syncPlan),
// and act carries the plan out (outcome). It returns what each phase
// made, for the status, even on error: no claims when the claim failed
// (no status is written then), no plan when none was made (paused before
// the first revision).
func (r *MyDeploymentReconciler) sync(ctx context.Context, o *observation) (*claimed, *syncPlan, *outcome, error) {
	c, err := r.claimer().claim(ctx, o)
	if err != nil {
		return nil, nil, &outcome{unclaimed: true, mem: c.mem}, err
	}
	// Nothing acted: what the claims found is all the outcome says.
	unacted := &outcome{collisionCount: c.collisionCount, retryAfter: c.retryAfter, mem: c.mem}
	if c.update == nil {
		return c, nil, unacted, nil // paused before its first revision: nothing to run yet
	}
	p, err := decide(o, c, r.parts, r.inPlaceTimeout())
	if err != nil {
		return c, p, unacted, err
	}
	logPlan(ctx, p)
	out, err := r.actor().act(ctx, p)
	return c, p, out, err
}
