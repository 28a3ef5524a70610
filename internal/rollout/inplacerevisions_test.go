package rollout

import (
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
)

// Which old revisions' pods move in place: those a gated pod carries and
// the diff reaches; a pair that cannot is told once (when first compared).
func TestInPlaceRevisions(t *testing.T) {
	rev := func(name string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	pod := func(revision string, gated bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appsv1beta1.RevisionLabel: revision}}}
		if gated {
			inplace.WithGate(&p.Spec)
		}
		return p
	}
	towards := rev("web-5")
	revisions := []*appsv1.ControllerRevision{rev("web-1"), rev("web-2"), rev("web-3"), rev("web-4"), towards}
	// web-1 reaches web-5; web-2 does not, compared now; web-3 does not,
	// compared before; web-4's pods have no gate; web-0's history is gone.
	diff := func(from, _ *appsv1.ControllerRevision) (*inplace.Change, bool, error) {
		switch from.Name {
		case "web-1":
			return &inplace.Change{}, true, nil
		case "web-2":
			return nil, true, errors.New("a port changes")
		}
		return nil, false, errors.New("a volume changes")
	}
	pods := []*corev1.Pod{pod("web-1", true), pod("web-1", true), pod("web-2", true), pod("web-3", true),
		pod("web-4", false), pod("web-0", true), pod("web-5", true)}
	names, refused := InPlaceRevisions(pods, revisions, towards, diff)
	if !slices.Equal(names, []string{"web-1"}) {
		t.Errorf("in place: %v, want [web-1]", names)
	}
	if len(refused) != 1 || refused[0].Revision != "web-2" || refused[0].Why.Error() != "a port changes" {
		t.Errorf("refused: %+v, want web-2 once, with its reason", refused)
	}
}
