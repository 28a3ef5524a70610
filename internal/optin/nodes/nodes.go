// Package nodes is the node view that the drain and waves modules share:
// one Node informer per manager (View), started once some object opts
// into a module that reads it and the manager may list and watch Nodes;
// what a sync reads of it (Seen: the nodes being drained, a node's label);
// and, when a node changes as a module reads it, that module's objects
// with pods on the node to sync again (Watch, each module's part).
package nodes

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// sharedName is the view's name among a setup's shared parts (optin.Share).
const sharedName = "nodes"

// Watch is one module's part: the view as the module reads it, and the
// module's MyDeployments to sync again (Events). Every Watch of a setup
// reads the same View.
type Watch struct {
	view *View
	// module parses an object: those it returns a spec for opt in.
	module optin.Module
	// matters says a node change is one the module's objects sync again
	// for (DrainingChanged, LabelsChanged).
	matters Change
	// events enqueues MyDeployments (a channel source of the controller).
	events chan event.GenericEvent
	// everyReplica: every replica reconciles (shards), so each watches.
	everyReplica bool
}

// A Change says whether a node's change matters to a module: old is nil
// for a node added, node nil for one deleted, never both.
type Change func(old, node *corev1.Node) bool

var (
	_ manager.LeaderElectionRunnable = &Watch{}
	_ optin.Watch                    = &Watch{}
)

// For is module's part: the view of env's setup (built by the first
// module that asks, optin.Share), read as module reads it. Its Events are
// module's opted-in objects once the view started or was denied, and
// those with pods on a node whose change matters.
func For(env optin.BuildEnv, module optin.Module, matters Change) *Watch {
	v := optin.Share(env.Shared, sharedName, func() *View { return newView(env) })
	w := &Watch{view: v, module: module, matters: matters, events: make(chan event.GenericEvent, 1024),
		everyReplica: env.EveryReplica}
	v.add(w)
	return w
}

// Events implements optin.Watch.
func (w *Watch) Events() <-chan event.GenericEvent { return w.events }

// NeedLeaderElection: only a replica that reconciles watches (the
// leader, or every replica with shards).
func (w *Watch) NeedLeaderElection() bool { return !w.everyReplica }

// Start runs the view until ctx ends (View.Start: once per view, however
// many modules share it). It returns nil: nothing here may stop the
// manager.
func (w *Watch) Start(ctx context.Context) error { return w.view.Start(ctx) }

// Seen is what a sync of an opted-in MyDeployment reads now. It wakes the
// view if it has not started: this object opts in. A nil watch (a
// reconciler built without one) knows no node and is not denied.
func (w *Watch) Seen() Seen {
	if w == nil {
		return Seen{}
	}
	return w.view.seen()
}

// Seen is what one sync reads of the view: the nodes as the informer holds
// them (none until it has synced), and whether the manager is denied Nodes.
type Seen struct {
	nodes toolscache.Indexer
	// Denied: the manager may not list and watch Nodes.
	Denied bool
}

// Synced says the informer has synced: a node not seen does not exist.
func (s Seen) Synced() bool { return s.nodes != nil }

// DrainingNodes are the nodes being drained (Draining, and not being
// deleted), by name: a copy; nil until the informer has synced.
func (s Seen) DrainingNodes() map[string]bool {
	if s.nodes == nil {
		return nil
	}
	keys, _ := s.nodes.IndexKeys(drainingIndex, "true") // only an unknown index errs
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true // a Node's key is its name
	}
	return out
}

// Label is node's value of the label key; has is false on a node without
// it, and ok false for a node not seen (or before the informer synced).
func (s Seen) Label(node, key string) (value string, has, ok bool) {
	if s.nodes == nil {
		return "", false, false
	}
	obj, found, _ := s.nodes.GetByKey(node) // a Node's key is its name
	n, _ := obj.(*corev1.Node)
	if !found || n == nil {
		return "", false, false
	}
	value, has = n.Labels[key]
	return value, has, true
}

// Draining says node is being drained as the drain opt-in means it:
// cordoned, or tainted for removal by the Cluster Autoscaler or Karpenter.
func Draining(node *corev1.Node) bool {
	if node.Spec.Unschedulable {
		return true
	}
	for _, t := range node.Spec.Taints {
		if t.Key == appsv1beta1.TaintToBeDeleted || t.Key == appsv1beta1.TaintKarpenterDisrupted {
			return true
		}
	}
	return false
}

// drainingNow says node is a node, not being deleted, and Draining.
func drainingNow(node *corev1.Node) bool {
	return node != nil && node.DeletionTimestamp == nil && Draining(node)
}

// DrainingChanged is the drain module's Change: a node starts or stops
// being drained (deleted counts as stopping).
func DrainingChanged(old, node *corev1.Node) bool {
	return drainingNow(old) != drainingNow(node)
}

// LabelsChanged is the waves module's Change: a node is added or deleted,
// or its labels changed.
func LabelsChanged(old, node *corev1.Node) bool {
	return old == nil || node == nil || !maps.Equal(old.Labels, node.Labels)
}
