package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// writeStatus writes st as md's whole status, computed from one observation,
// only if md is still the object stored (its resourceVersion is the patch's
// precondition): a status computed from a stale copy is refused with a
// conflict rather than merged into fields another sync wrote, which could
// say a rollout is complete while old or unavailable pods run.
func (r *MyDeploymentReconciler) writeStatus(ctx context.Context, md *appsv1beta1.MyDeployment, st appsv1beta1.MyDeploymentStatus) error {
	// Diff the status alone: marshalling the whole object (its pod template)
	// twice per write was a tenth of the manager's CPU.
	from := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: md.ResourceVersion}, Status: md.Status}
	to := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: md.ResourceVersion}, Status: st}
	patch, err := client.MergeFromWithOptions(from, client.MergeFromWithOptimisticLock{}).Data(to)
	if err != nil {
		return fmt.Errorf("computing the status patch: %w", err)
	}
	target := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: md.Name, Namespace: md.Namespace}}
	if err := r.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	r.Written.wrote(client.ObjectKeyFromObject(md).String(), md.ResourceVersion, target)
	return nil
}

// writeMemory remembers each MyDeployment as our last write of it (an
// annotation patch, a status patch) left it, and the resourceVersions it
// had just before our writes. The cache shows our own write a moment
// later; a sync that reads the object before then would plan from the
// annotations before the write (what the pods are sized for: a stale
// record makes a scaling event of a rollout step) and diff against the
// status before it (refused by the optimistic lock for nothing). Such a
// sync uses the object our write returned instead: it is the stored
// object, newer than the cache's copy. Once the cache shows any version
// not of the chain, the memory of key is dropped: the cache has moved past
// it. Safe for concurrent use; a nil memory remembers nothing.
type writeMemory struct {
	mu sync.Mutex
	m  map[string]writtenObject
}

type writtenObject struct {
	// before are the versions our writes started from, oldest first.
	before []string
	obj    *appsv1beta1.MyDeployment
}

func newWriteMemory() *writeMemory { return &writeMemory{m: map[string]writtenObject{}} }

// catchUp brings md, read from the cache, up to our last write of it when
// the cache has not shown that write yet.
func (m *writeMemory) catchUp(key string, md *appsv1beta1.MyDeployment) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.m[key]
	if !ok {
		return
	}
	if !slices.Contains(w.before, md.ResourceVersion) {
		delete(m.m, key) // the cache shows our last write, or moved past it
		return
	}
	w.obj.DeepCopyInto(md)
}

// wrote records obj, the object as a write that started from version
// before returned it.
func (m *writeMemory) wrote(key, before string, obj *appsv1beta1.MyDeployment) {
	if m == nil || obj.ResourceVersion == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w := writtenObject{before: []string{before}, obj: obj.DeepCopy()}
	if prev, ok := m.m[key]; ok && prev.obj.ResourceVersion == before {
		w.before = append(slices.Clip(prev.before), before) // a chain of our writes
	}
	m.m[key] = w
}

func (m *writeMemory) forget(key string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
}
