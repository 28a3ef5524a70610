package controller

import (
	"context"
	"fmt"

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
func (r *MyDeploymentReconciler) writeStatus(ctx context.Context, obj *object, md *appsv1beta1.MyDeployment, st appsv1beta1.MyDeploymentStatus) error {
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
	wroteObject(obj, writeStatus, md.ResourceVersion, target)
	return nil
}
