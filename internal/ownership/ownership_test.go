package ownership

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

var owner = &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "web-uid"}}

// pod is a pod of revision web-2 (hash 2), controlled by controller ("" for none).
func pod(name string, controller types.UID, change ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
		Labels: map[string]string{"app": "web", appsv1beta1.RevisionLabel: "web-2", appsv1beta1.PodTemplateHashLabel: "2"}}}
	if controller != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: appsv1beta1.GroupVersion.String(), Kind: "MyDeployment",
			Name: "web", UID: controller, Controller: ptr.To(true)}}
	}
	for _, c := range change {
		c(p)
	}
	return p
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestClaimPods(t *testing.T) {
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-3", Labels: map[string]string{revision.HashLabel: "2"}}}
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	unselected := func(p *corev1.Pod) { p.Labels["app"] = "other" }
	stripped := func(p *corev1.Pod) { delete(p.Labels, appsv1beta1.PodTemplateHashLabel) }
	stray := func(uid types.UID, p *corev1.Pod) StrayRead {
		return StrayRead{UID: uid, Stray: Stray{Name: string(uid), Owner: "web-uid"}, Pod: p}
	}
	for _, tc := range []struct {
		name                   string
		owned, orphans         []*corev1.Pod
		strays                 []StrayRead
		wantOwned, wantAdopt   []string
		wantRelease, wantNoted []string
	}{
		{name: "ours and selected", owned: []*corev1.Pod{pod("a", "web-uid")}, wantOwned: []string{"a"}},
		{name: "ours, no longer selected: released", owned: []*corev1.Pod{pod("a", "web-uid", unselected)},
			wantRelease: []string{"a"}},
		{name: "an orphan of the update template: adopted", orphans: []*corev1.Pod{pod("o", "")},
			wantOwned: []string{"o"}, wantAdopt: []string{"o"}},
		{name: "an orphan of another template: left", orphans: []*corev1.Pod{pod("o", "", func(p *corev1.Pod) {
			p.Labels[appsv1beta1.PodTemplateHashLabel] = "1"
		})}},
		{name: "an orphan terminating: left", orphans: []*corev1.Pod{pod("o", "", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{}
		})}},
		{name: "adopted between the reads: counted once, not adopted again", orphans: []*corev1.Pod{pod("o", "")},
			owned: []*corev1.Pod{pod("o", "web-uid")}, wantOwned: []string{"o"}},
		{name: "a stray read back stripped: released, not counted though cached",
			owned: []*corev1.Pod{pod("s", "web-uid")}, strays: []StrayRead{stray("s", pod("s", "web-uid", stripped))},
			wantRelease: []string{"s"}},
		{name: "a stray gone: not counted", owned: []*corev1.Pod{pod("s", "web-uid")}, strays: []StrayRead{stray("s", nil)}},
		{name: "a stray back in shape: counted from the cache", owned: []*corev1.Pod{pod("s", "web-uid")},
			strays: []StrayRead{stray("s", pod("s", "web-uid"))}, wantOwned: []string{"s"}},
		{name: "a stray now another's: not counted, not released", owned: []*corev1.Pod{pod("s", "web-uid")},
			strays: []StrayRead{stray("s", pod("s", "other-uid", stripped))}},
		{name: "a stray whose read failed: noted again", strays: []StrayRead{{UID: "s", Stray: Stray{Name: "s", Owner: "web-uid"},
			Err: errors.New("timeout")}}, wantNoted: []string{"s"}},
		{name: "a deleted namesake's stray: left to the garbage collector", strays: []StrayRead{{UID: "s",
			Stray: Stray{Name: "s", Owner: "old-uid"}, Pod: pod("s", "old-uid", stripped)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ClaimPods(PodInput{Owner: owner, Selector: sel, Update: update, Orphans: tc.orphans, Owned: tc.owned, Strays: tc.strays})
			var noted []string
			for _, st := range c.Strays {
				noted = append(noted, st.Name)
			}
			for _, check := range []struct {
				what      string
				got, want []string
			}{{"owned", names(c.Owned), tc.wantOwned}, {"adopted", names(c.Adopt), tc.wantAdopt},
				{"released", names(c.Release), tc.wantRelease}, {"noted again", noted, tc.wantNoted}} {
				if len(check.got) != len(check.want) || (len(check.got) > 0 && check.got[0] != check.want[0]) {
					t.Errorf("%s %v, want %v", check.what, check.got, check.want)
				}
			}
			for _, p := range c.Owned {
				if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != owner.UID || p.Labels[appsv1beta1.RevisionLabel] == "" {
					t.Errorf("owned pod %s is not ours as counted", p.Name)
				}
			}
			for _, p := range c.Adopt {
				if c.Owned[len(c.Owned)-1].Labels[appsv1beta1.RevisionLabel] != update.Name {
					t.Errorf("adopted pod %s not counted as of the update revision", p.Name)
				}
			}
		})
	}
}

func TestClaimRevisions(t *testing.T) {
	rev := func(name string, n int64) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Revision: n}
	}
	c := ClaimRevisions([]*appsv1.ControllerRevision{rev("o1", 1), rev("both", 2)}, []*appsv1.ControllerRevision{rev("both", 2), rev("ours", 3)})
	if len(c.Adopt) != 1 || c.Adopt[0].Name != "o1" {
		t.Errorf("adopt %v, want o1 only (both was adopted between the reads)", c.Adopt)
	}
	if len(c.Owned) != 3 || c.Owned[0].Name != "o1" || c.Owned[2].Name != "ours" {
		t.Errorf("owned %v, want o1, both, ours, oldest first", c.Owned)
	}
}

func TestAdoptedAfterAll(t *testing.T) {
	orphan := pod("p", "")
	for _, tc := range []struct {
		name          string
		fresh         *corev1.Pod
		adopted, more bool
	}{
		{"ours after all (a lost reply)", pod("p", "web-uid"), true, false},
		{"still an orphan: retry", pod("p", ""), false, true},
		{"another's", pod("p", "other-uid"), false, false},
		{"re-created under its name", pod("p", "", func(p *corev1.Pod) { p.UID = "new" }), false, false},
		{"terminating", pod("p", "web-uid", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), false, false},
	} {
		adopted, orphanStill := AdoptedAfterAll(orphan, tc.fresh, owner.UID)
		if (adopted != nil) != tc.adopted || orphanStill != tc.more {
			t.Errorf("%s: adopted %v, still an orphan %v", tc.name, adopted != nil, orphanStill)
		}
	}
	if MayAdopt(owner, nil) || MayAdopt(owner, &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{UID: "other"}}) ||
		!MayAdopt(owner, owner.DeepCopy()) {
		t.Error("MayAdopt: only the object claimed, present, may adopt")
	}
}
