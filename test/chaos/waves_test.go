package chaos

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/waves"
)

// Zone waves (issue 53) as a random change: the cluster's nodes labelled
// as zones for the suite (zoneKey, taken off at its end), and a rollout
// one zone at a time with a bake of waveBake. Whatever the kills and API
// faults, no zone's new pods may be created before the zone before it is
// done and has baked: its first new pod is at least waveBake younger than
// the last of the zone before (pod creation times).

const (
	zoneKey  = "topology.kubernetes.io/zone"
	waveBake = 2 * time.Second
)

var (
	// zoneOf is each node's zone, set by labelZones.
	zoneOf        map[string]string
	waveRollouts  atomic.Int64
	wavesAcrossed atomic.Int64 // rollouts that went through more than one zone
)

// labelZones labels the cluster's nodes zone-a, zone-b, zone-c in turn and
// returns what puts their labels back.
func labelZones(ctx context.Context, c client.Client) (restore func(), err error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, err
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	zoneOf = map[string]string{}
	var undo []string
	for i, n := range nodes.Items {
		zone := fmt.Sprintf("zone-%c", 'a'+i%3)
		was := "null"
		if v, ok := n.Labels[zoneKey]; ok {
			was = fmt.Sprintf("%q", v)
		}
		undo = append(undo, n.Name, was)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
		if err := c.Patch(ctx, node, client.RawPatch(types.MergePatchType,
			fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, zoneKey, zone))); err != nil {
			return nil, err
		}
		zoneOf[n.Name] = zone
	}
	return func() {
		for i := 0; i < len(undo); i += 2 {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: undo[i]}}
			_ = c.Patch(context.Background(), node, client.RawPatch(types.MergePatchType,
				fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s}}}`, zoneKey, undo[i+1])))
		}
	}, nil
}

// wavesChange rolls d to a new image one zone at a time, then checks the
// new pods' creation times zone by zone and removes the opt-in. It holds
// the cordon lock: a drain's cordoned node would hold a wave's pods
// pinned to its zone.
func (e *env) wavesChange(ctx context.Context, d *tracked) error {
	e.cordon.Lock()
	defer e.cordon.Unlock()
	next := d.cur
	next.image++
	e.w.setBounds(d.uid, d.inFlight(d.cur, next))
	value := fmt.Sprintf(`{"key":%q,"bake":%q}`, zoneKey, waveBake)
	if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"spec":{"template":{"spec":{"containers":%s}}}}`,
		waves.Annotation, value, next.containers())); err != nil {
		return err
	}
	update, err := e.waitUpdateRevision(ctx, d)
	if err != nil {
		return err
	}
	if err := e.waitConverged(ctx, d, next); err != nil {
		return fmt.Errorf("waves: %w", err)
	}
	if err := e.wavesInOrder(ctx, d, update); err != nil {
		return err
	}
	d.cur = next
	e.w.setBounds(d.uid, d.steady(next))
	waveRollouts.Add(1)
	return e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, waves.Annotation))
}

// wavesInOrder checks the pods of update zone by zone (by name: no order
// given): each zone's first pod created at least waveBake after the last
// of the zone before. The API server's times are whole seconds, cut down:
// a bake that began at (or after) the true time shows in full.
func (e *env) wavesInOrder(ctx context.Context, d *tracked, update string) error {
	var pods corev1.PodList
	if err := e.c.List(ctx, &pods, client.InNamespace(d.ns),
		client.MatchingLabels{"app": d.name, appsv1beta1.RevisionLabel: update}); err != nil {
		return err
	}
	first, last := map[string]time.Time{}, map[string]time.Time{}
	for _, p := range pods.Items {
		z, ok := zoneOf[p.Spec.NodeName]
		if !ok {
			return fmt.Errorf("waves: pod %s on node %q, of no zone", p.Name, p.Spec.NodeName)
		}
		if pinned := p.Annotations["apps.mydeployment.io/wave"]; pinned != z {
			return fmt.Errorf("waves: pod %s in %s pinned to %q", p.Name, z, pinned)
		}
		t := p.CreationTimestamp.Time
		if f, ok := first[z]; !ok || t.Before(f) {
			first[z] = t
		}
		if l, ok := last[z]; !ok || t.After(l) {
			last[z] = t
		}
	}
	var zones []string
	for z := range first {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	for i := 1; i < len(zones); i++ {
		if gap := first[zones[i]].Sub(last[zones[i-1]]); gap < waveBake {
			return fmt.Errorf("waves: %s's first new pod created %s after %s's last: want at least the bake, %s",
				zones[i], gap, zones[i-1], waveBake)
		}
	}
	if len(zones) > 1 {
		wavesAcrossed.Add(1)
	}
	return nil
}

// noteWaves adds the waves changes to the figures.
func noteWaves() {
	if n := waveRollouts.Load(); n > 0 {
		figures.note("zone waves: %d rollouts, %d of them across more than one zone, each zone's new pods at least the bake (%s) after the zone before's",
			n, wavesAcrossed.Load(), waveBake)
	}
}
