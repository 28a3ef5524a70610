package rollout

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// draining is a RollingUpdate at rest with the nodes named draining.
func draining(replicas, surge, unavailable int32, nodes []string, ps ...[]*corev1.Pod) Input {
	in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, Pods: join(ps...)}
	in.DrainingNodes = map[string]bool{}
	for _, n := range nodes {
		in.DrainingNodes[n] = true
	}
	return in
}

var nodeA, nodesAB = []string{"a"}, []string{"a", "b"}

func TestComputeDrain(t *testing.T) {
	web := func(opts ...podOpt) []*corev1.Pod { return pods("web", revNew, 1, append(opts, onNode("a"))...) }
	runPlanCases(t, []planCase{
		{
			name:       "drain maxSurge=0 maxUnavailable=1, 1 replica (step 1/3): a replacement first, though maxSurge is 0",
			in:         draining(1, 0, 1, nodeA, web()),
			wantCreate: 1, wantReason: ReasonDrain,
		},
		{
			name:       "drain maxSurge=0 maxUnavailable=1, 1 replica (step 2/3): the old pod stays while its replacement is not available",
			in:         draining(1, 0, 1, nodeA, web(), pods("new", revNew, 1, pending)),
			wantReason: ReasonRollingUpdateWait,
		},
		{
			name:       "drain maxSurge=0 maxUnavailable=1, 1 replica (step 3/3): the replacement available, the old pod goes",
			in:         draining(1, 0, 1, nodeA, web(), pods("new", revNew, 1)),
			wantDelete: []string{"web-0"}, wantDrained: []string{"web-0"}, wantReason: ReasonDrain,
		},
		{
			name:       "drain maxSurge=1 maxUnavailable=0 (step 1/2): a replacement first",
			in:         draining(1, 1, 0, nodeA, web()),
			wantCreate: 1, wantReason: ReasonDrain,
		},
		{
			name:       "drain maxSurge=1 maxUnavailable=0 (step 2/2): replaced once the new pod is available",
			in:         draining(1, 1, 0, nodeA, web(), pods("new", revNew, 1)),
			wantDelete: []string{"web-0"}, wantDrained: []string{"web-0"}, wantReason: ReasonDrain,
		},
		{
			name:      "drain under respect-pdb: the old pod is evicted",
			in:        withPDB(draining(1, 1, 0, nodeA, web(), pods("new", revNew, 1))),
			wantEvict: []string{"web-0"}, wantDrained: []string{"web-0"}, wantReason: ReasonDrain,
		},
		{
			name:       "drain 25%/25% of 4 (step 1/3): two pods on the node, one surge pod",
			in:         draining(4, 1, 1, nodeA, pods("a", revNew, 2, onNode("a")), pods("x", revNew, 2)),
			wantCreate: 1, wantReason: ReasonDrain,
		},
		{
			name:       "drain 25%/25% of 4 (step 2/3): maxUnavailable would allow a removal, the drain does not: the new pod is not available",
			in:         draining(4, 1, 1, nodeA, pods("a", revNew, 2, onNode("a")), pods("x", revNew, 2), pods("new", revNew, 1, pending)),
			wantReason: ReasonRollingUpdateWait,
		},
		{
			name:       "drain 25%/25% of 4 (step 3/3): one replaced; the next surge pod once it is gone",
			in:         draining(4, 1, 1, nodeA, pods("a", revNew, 2, onNode("a")), pods("x", revNew, 2), pods("new", revNew, 1)),
			wantDelete: []string{"a-0"}, wantDrained: []string{"a-0"}, wantReason: ReasonDrain,
		},
		{
			name:       "drain 25% of 10: three pods on the node, three surge pods at once",
			in:         draining(10, 3, 2, nodeA, pods("a", revNew, 3, onNode("a")), pods("x", revNew, 7)),
			wantCreate: 3, wantReason: ReasonDrain,
		},
		{
			name:       "two nodes cordoned at once, maxSurge=1 (step 1/2): one surge pod",
			in:         draining(3, 1, 0, nodesAB, pods("a", revNew, 1, onNode("a")), pods("b", revNew, 1, onNode("b")), pods("c", revNew, 1)),
			wantCreate: 1, wantReason: ReasonDrain,
		},
		{
			name: "two nodes cordoned at once, maxSurge=1 (step 2/2): one replaced per available replacement",
			in: draining(3, 1, 0, nodesAB, pods("a", revNew, 1, onNode("a")), pods("b", revNew, 1, onNode("b")), pods("c", revNew, 1),
				pods("new", revNew, 1)),
			wantDelete: []string{"a-0"}, wantDrained: []string{"a-0"}, wantReason: ReasonDrain,
		},
		{
			name:       "a pod on a draining node that is not available goes once its replacement exists",
			in:         draining(2, 0, 1, nodeA, web(notReady), pods("x", revNew, 1), pods("new", revNew, 1, pending)),
			wantDelete: []string{"web-0"}, wantDrained: []string{"web-0"}, wantReason: ReasonDrain,
		},
		{
			name: "mid-rollout, maxSurge=0 maxUnavailable=1: the step's own removal within maxUnavailable takes the draining old pod first",
			in: Input{Replicas: 2, MaxUnavailable: 1, DrainingNodes: map[string]bool{"a": true},
				Pods: join(pods("o", revOld, 1, onNode("a")), pods("k", revOld, 1))},
			wantCreate: 1, wantDelete: []string{"o-0"}, wantDrained: []string{"o-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "cordon lifted mid-move, the replacement pending: it is the surplus and goes",
			in:         draining(1, 0, 1, nil, web(), pods("new", revNew, 1, pending)),
			wantDelete: []string{"new-0"}, wantReason: ReasonScaleDown,
		},
		{
			name:       "cordon lifted mid-move, the replacement available: the newer pod goes",
			in:         draining(1, 0, 1, nil, web(), pods("new", revNew, 1, readyFor(1))),
			wantDelete: []string{"new-0"}, wantReason: ReasonScaleDown,
		},
		{
			name:       "no drain opt-in: a pod on a cordoned node stays (Deployment's behaviour)",
			in:         Input{Replicas: 1, MaxSurge: 1, Pods: web()},
			wantReason: ReasonInSync,
		},
		{
			name:       "paused: no pod is replaced",
			in:         func() Input { in := draining(1, 1, 0, nodeA, web()); in.Paused = true; return in }(),
			wantReason: ReasonPaused,
		},
		{
			name:       "Recreate ignores draining nodes",
			in:         func() Input { in := draining(1, 0, 0, nodeA, web()); in.Strategy = Recreate; return in }(),
			wantReason: ReasonInSync,
		},
		{
			name: "a scale-down takes the pod on the draining node first",
			in: func() Input {
				in := draining(1, 1, 0, nodeA, pods("x", revNew, 1), web())
				in.SizedFor = &Size{Replicas: 2, MaxReplicas: 3}
				return in
			}(),
			wantDelete: []string{"web-0"}, wantReason: ReasonDrain,
		},
	})
}

// drainBounds checks, before a reconcile, a drain's bounds: never more
// than replicas+max(maxSurge, 1) active pods, never fewer than replicas
// available (the pods were all available when the drain began).
func drainBounds(t *testing.T, c *cluster, in Input) {
	t.Helper()
	o := observe(c.input(in))
	if maxActive := int(in.Replicas) + max(int(in.MaxSurge), 1); o.active > maxActive {
		t.Fatalf("step %d: %d active pods > replicas+max(maxSurge,1)=%d", c.step, o.active, maxActive)
	}
	if o.available < int(in.Replicas) {
		t.Fatalf("step %d: %d available pods < replicas=%d", c.step, o.available, in.Replicas)
	}
}

// onNodes counts the active pods on the nodes named.
func (c *cluster) onNodes(nodes map[string]bool) int {
	n := 0
	for _, p := range c.active() {
		if nodes[p.Spec.NodeName] {
			n++
		}
	}
	return n
}

// TestDrainSimulation drains one node, or two at once, of a settled
// MyDeployment for many settings: every pod on them is replaced, each
// listed once as drained, never more than replicas+max(maxSurge, 1) pods
// and never fewer than replicas available, and the result converges.
func TestDrainSimulation(t *testing.T) {
	for _, replicas := range []int32{1, 2, 3, 10} {
		for _, f := range fences {
			for i, nodes := range [][]string{{"node-0"}, {"node-0", "node-1"}} {
				ready := readinessPatterns[(int(replicas)+i)%len(readinessPatterns)]
				minReady := int32(5 * i)
				t.Run(fmt.Sprintf("replicas=%d/fence=%s/nodes=%d/minReady=%d/%s", replicas, f, len(nodes), minReady, ready.name), func(t *testing.T) {
					surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
					if err != nil {
						t.Fatal(err)
					}
					in := draining(replicas, surge, unavailable, nodes)
					in.UpdateRevision, in.RespectPDB, in.MinReadySeconds = revNew, i == 1, minReady
					c := newCluster(t, ready, int(replicas), revNew)
					c.avoid = in.DrainingNodes
					want := c.onNodes(in.DrainingNodes)
					drained := map[*corev1.Pod]bool{}
					for !c.converged(in) || c.onNodes(in.DrainingNodes) > 0 {
						if c.step > stepBudget(replicas) {
							t.Fatalf("not drained after %d steps: %d pods left on the nodes", c.step, c.onNodes(in.DrainingNodes))
						}
						drainBounds(t, c, in)
						for _, d := range c.reconcile(in).Drained {
							if drained[d] {
								t.Fatalf("step %d: %s drained twice", c.step, d.Name)
							}
							drained[d] = true
						}
					}
					if len(drained) != want {
						t.Fatalf("%d pods listed as drained, %d were on the nodes", len(drained), want)
					}
					assertSettled(t, c, in)
				})
			}
		}
	}
}

// TestDrainLiftedSimulation lifts the cordon once the first replacement
// is created: the surplus pod goes, within the same bounds, and the
// MyDeployment settles at replicas pods.
func TestDrainLiftedSimulation(t *testing.T) {
	for _, replicas := range []int32{1, 3} {
		for _, f := range fences {
			t.Run(fmt.Sprintf("replicas=%d/fence=%s", replicas, f), func(t *testing.T) {
				surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
				if err != nil {
					t.Fatal(err)
				}
				in := draining(replicas, surge, unavailable, []string{"node-1"})
				in.UpdateRevision = revNew
				c := newCluster(t, readinessPatterns[1], int(replicas), revNew)
				c.avoid = in.DrainingNodes
				for created := false; !created; {
					if c.step > stepBudget(replicas) {
						t.Fatalf("no replacement created after %d steps", c.step)
					}
					drainBounds(t, c, in)
					created = len(c.reconcile(in).Create) > 0
				}
				lifted := in
				lifted.DrainingNodes, c.avoid = nil, nil
				for start := c.step; !c.converged(lifted); {
					if c.step-start > stepBudget(replicas) {
						t.Fatalf("not settled %d steps after the cordon was lifted", c.step-start)
					}
					drainBounds(t, c, in)
					c.reconcile(lifted)
				}
				assertSettled(t, c, lifted)
			})
		}
	}
}

// TestDrainDuringRolloutSimulation drains a node while a rollout is under
// way: the rollout's bounds hold (with the drain's surge of at least one),
// no pod is left on the node, and the rollout converges.
func TestDrainDuringRolloutSimulation(t *testing.T) {
	for _, replicas := range []int32{1, 3, 10} {
		for _, f := range fences {
			t.Run(fmt.Sprintf("replicas=%d/fence=%s", replicas, f), func(t *testing.T) {
				surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
				if err != nil {
					t.Fatal(err)
				}
				in := draining(replicas, surge, unavailable, []string{"node-2"})
				in.UpdateRevision = revNew
				c := newCluster(t, readinessPatterns[2], int(replicas), revOld)
				c.avoid = in.DrainingNodes
				maxActive := int(replicas) + max(int(surge), 1)
				minAvailable := int(replicas - min(unavailable, replicas))
				for !c.converged(in) || c.onNodes(in.DrainingNodes) > 0 {
					if c.step > stepBudget(replicas) {
						t.Fatalf("not converged after %d steps", c.step)
					}
					o := observe(c.input(in))
					if o.active > maxActive || o.available < minAvailable {
						t.Fatalf("step %d: %d active (max %d), %d available (min %d)", c.step, o.active, maxActive, o.available, minAvailable)
					}
					c.reconcile(in)
				}
				assertSettled(t, c, in)
			})
		}
	}
}
