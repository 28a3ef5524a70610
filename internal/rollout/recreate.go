package rollout

// planRecreate is one Recreate step while an old-revision pod may still run
// (Deployment's rolloutRecreate): delete every active old pod, create
// nothing until the terminating ones are gone too. The old pods are
// replaced (evicted under RespectPDB), labelled ones first; surplus
// update-revision pods are a scale and deleted.
func planRecreate(s podSet, l limits) Plan {
	p := Plan{
		Evict:  s.rank.sorted(s.old),
		Reason: ReasonRecreateWait,
	}
	if len(s.old) > 0 {
		p.Reason = ReasonRecreateDeleteOld
	}
	// Surplus update-revision pods are a scaling matter, not a rollout one.
	if excess := len(s.updated) - l.replicas; excess > 0 {
		p.Delete = s.rank.sorted(s.updated)[:excess]
	}
	return p
}
