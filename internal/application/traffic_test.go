package application

import (
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func canaryMD(steps, record string, replicas int32) *appsv1beta1.MyDeployment {
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: map[string]string{}}}
	if steps != "" {
		md.Annotations[appsv1beta1.CanaryStepsAnnotation] = steps
	}
	if record != "" {
		md.Annotations[appsv1beta1.CanaryStepAnnotation] = record
	}
	md.Spec.Replicas = ptr.To(replicas)
	md.Status.CurrentRevision, md.Status.UpdateRevision, md.Status.UpdatedReplicas = "shop-1", "shop-2", 1
	return md
}

func TestTrafficSplit(t *testing.T) {
	const steps = "10%, pause, 50%, pause, 100%, pause"
	const weights = "weight 2%, 1, pause, weight 10%, pause, weight 50%, 50%, pause"
	at := func(step int) string { return `{"revision":"shop-2","step":` + strconv.Itoa(step) + `}` }
	split := &Split{Stable: "shop-1", Canary: "shop-2"}
	cases := []struct {
		name   string
		md     *appsv1beta1.MyDeployment
		change func(*appsv1beta1.MyDeployment)
		want   *Split // nil: the one Service
	}{
		{name: "no canary steps: the one Service", md: canaryMD("", at(2), 10)},
		{name: "steps that do not parse: the one Service", md: canaryMD("10%, 5%", at(2), 10)},
		{name: "no rollout under way", md: canaryMD(steps, at(2), 10),
			change: func(md *appsv1beta1.MyDeployment) { md.Status.CurrentRevision = "shop-2" }},
		{name: "no current revision yet", md: canaryMD(steps, "", 10),
			change: func(md *appsv1beta1.MyDeployment) { md.Status.CurrentRevision = "" }},
		{name: "rollout begun, no record yet", md: canaryMD(steps, "", 10), want: split},
		{name: "record of an older rollout", md: canaryMD(steps, `{"revision":"shop-0","step":7}`, 10), want: split},
		{name: "step 1 under way", md: canaryMD(steps, at(1), 10), want: split},
		{name: "step 6, the last", md: canaryMD(steps, at(6), 10), want: split},
		{name: "every step done: the one Service", md: canaryMD(steps, at(7), 10)},
		{name: "aborted with canary pods left", md: canaryMD(steps, at(4), 10),
			change: func(md *appsv1beta1.MyDeployment) { md.Annotations[appsv1beta1.AbortedRevisionAnnotation] = "shop-2" },
			want:   &Split{Stable: "shop-1", Canary: "shop-2", Aborted: true}},
		{name: "aborted, no canary pod left: the one Service", md: canaryMD(steps, at(4), 10),
			change: func(md *appsv1beta1.MyDeployment) {
				md.Annotations[appsv1beta1.AbortedRevisionAnnotation] = "shop-2"
				md.Status.UpdatedReplicas = 0
			}},
		{name: "weight steps, no record yet: the first step's weight", md: canaryMD(weights, "", 10),
			want: &Split{Stable: "shop-1", Canary: "shop-2", Stated: ptr.To[int32](2), Headroom: 1}},
		{name: "weight steps, at the pause after the 2% pod", md: canaryMD(weights, at(3), 10),
			want: &Split{Stable: "shop-1", Canary: "shop-2", Stated: ptr.To[int32](2), Headroom: 1}},
		{name: "weight steps, at the pause after weight 10%", md: canaryMD(weights, at(5), 10),
			want: &Split{Stable: "shop-1", Canary: "shop-2", Stated: ptr.To[int32](10), Headroom: 1}},
		{name: "weight steps, at the last pause", md: canaryMD(weights, at(8), 10),
			want: &Split{Stable: "shop-1", Canary: "shop-2", Stated: ptr.To[int32](50), Headroom: 1}},
		{name: "weight steps, the record of an older rollout: the first step's weight", md: canaryMD(weights, `{"revision":"shop-0","step":8}`, 10),
			want: &Split{Stable: "shop-1", Canary: "shop-2", Stated: ptr.To[int32](2), Headroom: 1}},
		{name: "weight steps with a headroom", md: canaryMD(weights, at(8), 10),
			change: func(md *appsv1beta1.MyDeployment) { md.Annotations["apps.mydeployment.io/weight-headroom"] = "1.5" },
			want:   &Split{Stable: "shop-1", Canary: "shop-2", Stated: ptr.To[int32](50), Headroom: 1.5}},
		{name: "an older revision aborted: this rollout goes on", md: canaryMD(steps, at(2), 10),
			change: func(md *appsv1beta1.MyDeployment) { md.Annotations[appsv1beta1.AbortedRevisionAnnotation] = "shop-0" },
			want:   split},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.change != nil {
				c.change(c.md)
			}
			if got := TrafficSplit(c.md); !equalSplits(got, c.want) {
				t.Errorf("TrafficSplit = %+v, want %+v", got, c.want)
			}
		})
	}
}

func equalSplits(a, b *Split) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, y := *a, *b
	if (x.Stated == nil) != (y.Stated == nil) || x.Stated != nil && *x.Stated != *y.Stated {
		return false
	}
	x.Stated, y.Stated = nil, nil
	return x == y
}

func TestWeighed(t *testing.T) {
	split := &Split{Stable: "shop-1", Canary: "shop-2"}
	aborted := &Split{Stable: "shop-1", Canary: "shop-2", Aborted: true}
	weight := func(w int32) *Split { return &Split{Stable: "shop-1", Canary: "shop-2", CanaryWeight: w} }
	stated := func(s int32) *Split { return &Split{Stable: "shop-1", Canary: "shop-2", Stated: &s} }
	statedWeight := func(s, w int32) *Split {
		return &Split{Stable: "shop-1", Canary: "shop-2", Stated: &s, CanaryWeight: w}
	}
	headroom := func(s *Split, h float64) *Split { s.Headroom = h; return s }
	cases := []struct {
		name           string
		split          *Split
		stable, canary int32
		want           *Split
	}{
		{name: "no canary", split: nil, stable: 9, canary: 1},
		{name: "no ready endpoint yet: the one Service", split: split},
		{name: "step 1 under way, its pod not ready", split: split, stable: 10, want: weight(0)},
		{name: "the pause after 10% of 10 pods", split: split, stable: 9, canary: 1, want: weight(10)},
		{name: "pods moving: a pod not ready has no share", split: split, stable: 7, canary: 3, want: weight(30)},
		{name: "the pause after 50%", split: split, stable: 5, canary: 5, want: weight(50)},
		{name: "1 of 3 rounds to 33", split: split, stable: 2, canary: 1, want: weight(33)},
		{name: "2 of 3 rounds to 67", split: split, stable: 1, canary: 2, want: weight(67)},
		{name: "every stable pod gone", split: split, canary: 10, want: weight(100)},
		{name: "aborted: all to stable", split: aborted, stable: 8, canary: 2, want: &Split{Stable: "shop-1", Canary: "shop-2", Aborted: true}},
		{name: "aborted, no stable pod ready: the one Service", split: aborted, canary: 2},
		// Weight steps (issue 54): the stated weight, capped by the Ready share.
		{name: "2% stated, 1 of 10 pods ready: 2% exactly", split: stated(2), stable: 9, canary: 1, want: statedWeight(2, 2)},
		{name: "10% stated, 1 of 10 pods ready: 10%, the pod's share", split: stated(10), stable: 9, canary: 1, want: statedWeight(10, 10)},
		{name: "50% stated, 1 of 10 pods ready: capped at its share", split: stated(50), stable: 9, canary: 1, want: statedWeight(50, 10)},
		{name: "50% stated, 5 of 10 ready", split: stated(50), stable: 5, canary: 5, want: statedWeight(50, 50)},
		{name: "50% stated, 1 of 3 ready: the share rounded down", split: stated(50), stable: 2, canary: 1, want: statedWeight(50, 33)},
		{name: "2% stated, no canary pod ready: nothing", split: stated(2), stable: 10, want: statedWeight(2, 0)},
		{name: "2% stated, no stable pod ready: all to the canary, none to an empty Service", split: stated(2), canary: 3, want: statedWeight(2, 100)},
		{name: "0% stated before the first weight step", split: stated(0), stable: 9, canary: 1, want: statedWeight(0, 0)},
		{name: "50% stated, 1 of 10 pods ready, headroom 1.5: 15%", split: headroom(stated(50), 1.5), stable: 9, canary: 1,
			want: headroom(statedWeight(50, 15), 1.5)},
		{name: "50% stated, 1 of 10 pods ready, headroom 10: the stated 50%", split: headroom(stated(50), 10), stable: 9, canary: 1,
			want: headroom(statedWeight(50, 50), 10)},
		{name: "2% stated, headroom 2, no canary pod ready: still nothing", split: headroom(stated(2), 2), stable: 10,
			want: headroom(statedWeight(2, 0), 2)},
		{name: "stated, aborted: nothing", split: &Split{Stable: "shop-1", Canary: "shop-2", Aborted: true, Stated: ptr.To[int32](50)},
			stable: 5, canary: 5, want: &Split{Stable: "shop-1", Canary: "shop-2", Aborted: true, Stated: ptr.To[int32](50)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Weighed(c.split, c.stable, c.canary); !equalSplits(got, c.want) {
				t.Errorf("Weighed(%d, %d) = %+v, want %+v", c.stable, c.canary, got, c.want)
			}
		})
	}
}

func backendRef(name string, weight *int32) gatewayv1.HTTPBackendRef {
	return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
		BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: ptr.To(gatewayv1.PortNumber(80))},
		Weight:                 weight}}
}

func TestWeighLeavesAllButOurRefs(t *testing.T) {
	app := &appsv1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop"}}
	filter := gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Add: []gatewayv1.HTTPHeader{{Name: "X-By-Hand", Value: "1"}}}}
	other := backendRef("mirror", ptr.To(int32(5)))
	other.Namespace = ptr.To(gatewayv1.Namespace("elsewhere"))
	sameNameElsewhere := backendRef("shop", nil)
	sameNameElsewhere.Namespace = ptr.To(gatewayv1.Namespace("elsewhere"))
	rules := []gatewayv1.HTTPRouteRule{
		{Filters: []gatewayv1.HTTPRouteFilter{filter}, BackendRefs: []gatewayv1.HTTPBackendRef{other, backendRef("shop", nil)}},
		{BackendRefs: []gatewayv1.HTTPBackendRef{sameNameElsewhere}},
	}

	split := weigh(rules, app, &Split{Stable: "shop-1", Canary: "shop-2", CanaryWeight: 10})
	got := split[0].BackendRefs
	if len(got) != 3 || got[0].Name != "mirror" || got[1].Name != "shop-stable" || got[2].Name != "shop-canary" {
		t.Fatalf("split refs = %+v, want mirror, shop-stable, shop-canary", got)
	}
	if *got[1].Weight != 90 || *got[2].Weight != 10 || *got[1].Port != 80 || *got[2].Port != 80 {
		t.Errorf("weights and ports = %d:%d %d:%d, want 90:80 10:80", *got[1].Weight, *got[1].Port, *got[2].Weight, *got[2].Port)
	}
	if len(split[0].Filters) != 1 || split[0].Filters[0].RequestHeaderModifier.Add[0].Name != "X-By-Hand" {
		t.Errorf("the rule's filter changed: %+v", split[0].Filters)
	}
	if len(split[1].BackendRefs) != 1 || split[1].BackendRefs[0].Name != "shop" {
		t.Errorf("a Service named like ours in another namespace was changed: %+v", split[1].BackendRefs)
	}
	if len(rules[0].BackendRefs) != 2 {
		t.Errorf("weigh changed its input: %+v", rules[0].BackendRefs)
	}

	back := weigh(split, app, nil)[0].BackendRefs
	if len(back) != 2 || back[1].Name != "shop" || back[1].Weight != nil || *back[1].Port != 80 {
		t.Errorf("after the split = %+v, want mirror and shop (no weight)", back)
	}
	if w := weigh([]gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{backendRef("shop", ptr.To(int32(3)))}}}, app, nil); *w[0].BackendRefs[0].Weight != 3 {
		t.Errorf("the Service's own weight was not kept without a split: %+v", w[0].BackendRefs)
	}
}

// TestCapacityCondition: CapacityLimited is True while the route carries
// less than the steps state, and goes once it carries the stated weight
// (or there are no weight steps, or the rollout aborted).
func TestCapacityCondition(t *testing.T) {
	app := &appsv1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "shop", Generation: 3}}
	capped := Weighed(&Split{Stable: "shop-1", Canary: "shop-2", Stated: ptr.To[int32](50)}, 9, 1)
	var st appsv1beta1.ApplicationStatus
	capacity(app, capped, &st)
	c := meta.FindStatusCondition(st.Conditions, appsv1beta1.ApplicationCapacityLimited)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != appsv1beta1.ReasonCanaryPodsNotReady ||
		c.Message != "the canary carries 10%, not the 50% its steps state: no more than its Ready pods' share" || c.ObservedGeneration != 3 {
		t.Fatalf("capped at 10 of 50: condition %+v", c)
	}
	for _, w := range []*Split{
		Weighed(&Split{Stable: "shop-1", Canary: "shop-2", Stated: ptr.To[int32](50)}, 5, 5),
		Weighed(&Split{Stable: "shop-1", Canary: "shop-2"}, 9, 1),
		Weighed(&Split{Stable: "shop-1", Canary: "shop-2", Stated: ptr.To[int32](50), Aborted: true}, 9, 1),
		nil,
	} {
		was := st
		was.Conditions = append([]metav1.Condition(nil), st.Conditions...)
		capacity(app, w, &was)
		if c := meta.FindStatusCondition(was.Conditions, appsv1beta1.ApplicationCapacityLimited); c != nil {
			t.Errorf("split %+v: condition %+v left, want it gone", w, c)
		}
	}
}
