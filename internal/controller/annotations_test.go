package controller

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// TestScopeAnnotations: what the pods are sized for is written with the
// revision number, when the plan needs it, and never on a plain scale; a
// size for pods the plan writes waits for them.
func TestScopeAnnotations(t *testing.T) {
	sized := func(replicas, max int32) map[string]string {
		return rollout.Size{Replicas: replicas, MaxReplicas: max}.Annotations()
	}
	with := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			maps.Copy(out, m)
		}
		return out
	}
	rev2 := map[string]string{appsv1beta1.RevisionAnnotation: "2"}
	creates := []rollout.Creation{{Revision: "r", Count: 1}}
	for _, tc := range []struct {
		name          string
		annotations   map[string]string
		paused        bool
		plan          rollout.Plan
		now, afterPod map[string]string
	}{
		{
			name:        "at rest: nothing changes",
			annotations: with(rev2, sized(3, 4)),
			plan:        rollout.Plan{SizedFor: rollout.Size{Replicas: 3, MaxReplicas: 4}},
			now:         rev2,
		},
		{
			name:        "a plain scale waits for the next revision",
			annotations: with(rev2, sized(3, 4)),
			plan:        rollout.Plan{SizedFor: rollout.Size{Replicas: 5, MaxReplicas: 7}, Create: creates},
			now:         rev2,
		},
		{
			name:        "a new revision carries the size along",
			annotations: with(map[string]string{appsv1beta1.RevisionAnnotation: "1"}, sized(3, 4)),
			plan:        rollout.Plan{SizedFor: rollout.Size{Replicas: 5, MaxReplicas: 7}, Create: creates},
			now:         with(rev2, sized(5, 7)),
		},
		{
			name:        "a scaling event mid-rollout is recorded once its pods are written",
			annotations: with(rev2, sized(10, 13)),
			plan:        rollout.Plan{SizedFor: rollout.Size{Replicas: 30, MaxReplicas: 38}, RecordSize: true, Create: creates},
			now:         rev2,
			afterPod:    sized(30, 38),
		},
		{
			name:        "a record with nothing to write for it goes at once",
			annotations: rev2,
			plan:        rollout.Plan{SizedFor: rollout.Size{Replicas: 30, MaxReplicas: 38}, RecordSize: true},
			now:         with(rev2, sized(30, 38)),
		},
		{
			name:     "paused: no revision number, the size when it must",
			paused:   true,
			plan:     rollout.Plan{SizedFor: rollout.Size{Replicas: 4, MaxReplicas: 5}, RecordSize: true},
			now:      sized(4, 5),
			afterPod: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := &appsv1beta1.MyDeployment{
				ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations},
				Spec:       appsv1beta1.MyDeploymentSpec{RolloutSpec: appsv1beta1.RolloutSpec{Paused: tc.paused}},
			}
			now, afterPods := annotations(md, optin.RecordsOf(md), &appsv1.ControllerRevision{Revision: 2}, tc.plan)
			if !maps.Equal(now, tc.now) || !maps.Equal(afterPods, tc.afterPod) {
				t.Fatalf("got now=%v afterPods=%v\nwant now=%v afterPods=%v", now, afterPods, tc.now, tc.afterPod)
			}
		})
	}
}
