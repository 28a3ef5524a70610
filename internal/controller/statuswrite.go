package controller

import (
	"context"
	"fmt"
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
	r.WrittenStatus.wrote(client.ObjectKeyFromObject(md).String(), md.ResourceVersion, target.ResourceVersion, st)
	return nil
}

// statusMemory remembers each MyDeployment's last status write: the
// object's resourceVersion before and after it, and the status written. The
// cache shows our own write a moment later; a sync that reads the object
// before then would diff against the status before the write and be refused
// by the optimistic lock for nothing. As the write was conditional on
// `before`, the object at `after` is the object at `before` with that
// status, so such a sync can use it instead. Safe for concurrent use; a nil
// memory remembers nothing.
type statusMemory struct {
	mu sync.Mutex
	m  map[string]writtenStatus
}

type writtenStatus struct {
	before, after string
	status        appsv1beta1.MyDeploymentStatus
}

func newStatusMemory() *statusMemory { return &statusMemory{m: map[string]writtenStatus{}} }

// catchUp brings md, read from the cache, up to our last status write of it
// when the cache has not shown that write yet. Once the cache shows any
// other version, the memory of key is dropped.
func (m *statusMemory) catchUp(key string, md *appsv1beta1.MyDeployment) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.m[key]
	if !ok {
		return
	}
	if md.ResourceVersion != w.before {
		delete(m.m, key)
		return
	}
	md.ResourceVersion = w.after
	md.Status = *w.status.DeepCopy()
}

func (m *statusMemory) wrote(key, before, after string, st appsv1beta1.MyDeploymentStatus) {
	if m == nil || after == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[key] = writtenStatus{before: before, after: after, status: *st.DeepCopy()}
}

func (m *statusMemory) forget(key string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
}
