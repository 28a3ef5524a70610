package application

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// synced is what one sync found and did: each child's outcome, by its
// kind's index in kinds, and the Service's EndpointSlices.
type synced struct {
	outcomes       [numKinds]outcome
	endpointSlices []discoveryv1.EndpointSlice
	// weight is the canary's traffic split as planned
	// (observation.weighed); nil without one.
	weight *Split
}

// summary is one line per child, for the log: present, absent, not ours,
// or its error.
func (o synced) summary() []string {
	var s []string
	for _, c := range o.outcomes {
		switch {
		case c.notOwned:
			s = append(s, c.kind.name+": not ours")
		case c.err != nil:
			s = append(s, c.kind.name+": "+c.err.Error())
		case c.present:
			s = append(s, c.kind.name+": present")
		default:
			s = append(s, c.kind.name+": absent")
		}
	}
	return s
}

// readiness is why an Application is not ready: the problems of its
// children and the reason that leads (a name taken by someone else first,
// then a refused write, then the Gateway API missing); ChildrenReady and
// nothing when every child was synced.
type readiness struct {
	reason   string
	problems []string
}

// add records a problem under reason, which leads only if no problem
// before it had a reason earlier in precedence.
func (r *readiness) add(reason, problem string) {
	if len(r.problems) == 0 || precedence[reason] < precedence[r.reason] {
		r.reason = reason
	}
	r.problems = append(r.problems, problem)
}

// precedence orders the reasons of Ready=False: the first applies.
var precedence = map[string]int{appsv1beta1.ReasonChildNotOwned: 0, appsv1beta1.ReasonChildApplyFailed: 1,
	appsv1beta1.ReasonRouteCRDAbsent: 2, appsv1beta1.ReasonDeploymentNotAvailable: 3, appsv1beta1.ReasonNoReadyEndpoints: 4}

// childProblems is the readiness of the children's outcomes alone.
func childProblems(app *appsv1beta1.Application, obs synced) readiness {
	r := readiness{reason: appsv1beta1.ReasonChildrenReady}
	for _, o := range obs.outcomes {
		switch {
		case o.notOwned:
			r.add(appsv1beta1.ReasonChildNotOwned,
				fmt.Sprintf("%s %s exists and is not controlled by this Application; it is left alone", o.kind.name, app.Name+o.kind.suffix))
		case o.err != nil && !o.unwritten:
			r.add(appsv1beta1.ReasonChildApplyFailed, o.err.Error())
		case o.crdAbsent:
			r.add(appsv1beta1.ReasonRouteCRDAbsent, fmt.Sprintf("%s %s: the Gateway API CRDs are not installed "+
				"(gateway.networking.k8s.io/v1 %s is not served); it is made once they are", o.kind.name, app.Name+o.kind.suffix, o.kind.name))
		}
	}
	return r
}

// computeStatus is the Application's status from what the sync found and
// did (its children's outcomes, the Service's EndpointSlices): the
// MyDeployment's counters and its Available and Progressing conditions, the
// Service's cluster IP and ready endpoints, the Ingress's and HTTPRoute's
// URLs and load balancer, and Ready. observedGeneration moves only when
// every child was synced. Conditions keep their lastTransitionTime while
// unchanged.
func computeStatus(app *appsv1beta1.Application, obs synced) appsv1beta1.ApplicationStatus {
	st := appsv1beta1.ApplicationStatus{
		ObservedGeneration: app.Status.ObservedGeneration,
		Conditions:         append([]metav1.Condition(nil), app.Status.Conditions...),
	}
	if sel, err := metav1.LabelSelectorAsSelector(DeploymentSpec(app).Selector); err == nil {
		st.LabelSelector = sel.String()
	}
	ready := childProblems(app, obs)
	if len(ready.problems) == 0 && !slices.ContainsFunc(obs.outcomes[:], func(o outcome) bool { return o.unwritten }) {
		st.ObservedGeneration = app.Generation
	}
	mirrorDeployment(app, obs.outcomes[kindMyDeployment], &st, &ready)
	if o := obs.outcomes[kindService]; o.present {
		svc := o.live.(*corev1.Service)
		st.Service = &appsv1beta1.ApplicationServiceStatus{ClusterIP: svc.Spec.ClusterIP, ReadyEndpoints: readyEndpoints(obs.endpointSlices)}
		if st.Service.ReadyEndpoints == 0 && len(ready.problems) == 0 {
			ready.add(appsv1beta1.ReasonNoReadyEndpoints, fmt.Sprintf("Service %s has no ready endpoint", app.Name))
		}
	}
	if o := obs.outcomes[kindIngress]; o.present {
		ing := o.live.(*networkingv1.Ingress)
		st.Ingress = &appsv1beta1.ApplicationIngressStatus{LoadBalancer: ing.Status.LoadBalancer.Ingress}
		st.URLs = URLs(ing)
	}
	if o := obs.outcomes[kindHTTPRoute]; o.present {
		st.URLs = mergeURLs(st.URLs, RouteURLs(o.live.(*gatewayv1.HTTPRoute)))
	}
	st.Children = childLines(obs, &st)

	cond := metav1.Condition{Type: appsv1beta1.ApplicationReady, Status: metav1.ConditionTrue, Reason: ready.reason,
		Message: "every child is present and available", ObservedGeneration: app.Generation}
	if len(ready.problems) > 0 {
		cond.Status, cond.Message = metav1.ConditionFalse, strings.Join(ready.problems, "; ")
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	capacity(app, obs.weight, &st)
	return st
}

// capacity sets CapacityLimited while the route carries less than the
// canary's weight steps state (Split.Capped), and removes it otherwise.
func capacity(app *appsv1beta1.Application, w *Split, st *appsv1beta1.ApplicationStatus) {
	if !w.Capped() {
		meta.RemoveStatusCondition(&st.Conditions, appsv1beta1.ApplicationCapacityLimited)
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: appsv1beta1.ApplicationCapacityLimited,
		Status: metav1.ConditionTrue, Reason: appsv1beta1.ReasonCanaryPodsNotReady, ObservedGeneration: app.Generation,
		Message: fmt.Sprintf("the canary carries %d%%, not the %d%% its steps state: no more than its Ready pods' share",
			w.CanaryWeight, *w.Stated)})
}

// mirrorDeployment copies the MyDeployment's counters and its Available and
// Progressing conditions into st (Unknown while it reports none), and
// notes it not available when nothing else is wrong.
func mirrorDeployment(app *appsv1beta1.Application, o outcome, st *appsv1beta1.ApplicationStatus, ready *readiness) {
	mirrored := false
	if o.present {
		md := o.live.(*appsv1beta1.MyDeployment)
		st.Replicas, st.ReadyReplicas = md.Status.Replicas, md.Status.ReadyReplicas
		st.UpdatedReplicas, st.AvailableReplicas = md.Status.UpdatedReplicas, md.Status.AvailableReplicas
		if md.Status.LabelSelector != "" {
			st.LabelSelector = md.Status.LabelSelector
		}
		for _, c := range md.Status.Conditions {
			if c.Type != appsv1beta1.ConditionAvailable && c.Type != appsv1beta1.ConditionProgressing {
				continue
			}
			mirrored = true
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status),
				Reason: c.Reason, Message: c.Message, ObservedGeneration: app.Generation})
		}
		if !deploymentAvailable(md) && len(ready.problems) == 0 {
			ready.add(appsv1beta1.ReasonDeploymentNotAvailable, fmt.Sprintf("MyDeployment %s is not available: %d of %d pods available",
				app.Name, md.Status.AvailableReplicas, md.Status.Replicas))
		}
	}
	if !mirrored {
		for _, t := range []string{appsv1beta1.ApplicationAvailable, appsv1beta1.ApplicationProgressing} {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionUnknown,
				Reason: appsv1beta1.ReasonDeploymentNotObserved, Message: "the MyDeployment reports no conditions yet",
				ObservedGeneration: app.Generation})
		}
	}
}

// deploymentAvailable: the MyDeployment has synced its current spec and
// says Available=True.
func deploymentAvailable(md *appsv1beta1.MyDeployment) bool {
	if md.Status.ObservedGeneration < md.Generation {
		return false
	}
	for _, c := range md.Status.Conditions {
		if c.Type == appsv1beta1.ConditionAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyEndpoints counts the ready endpoints over a Service's EndpointSlices,
// each pod once (a dual-stack Service has a slice per address family).
// An endpoint without a ready condition is ready, as the API says.
func readyEndpoints(slices []discoveryv1.EndpointSlice) int32 {
	seen := map[string]bool{}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			key := ""
			if e.TargetRef != nil && e.TargetRef.UID != "" {
				key = string(e.TargetRef.UID)
			} else if len(e.Addresses) > 0 {
				key = e.Addresses[0]
			}
			if key != "" {
				seen[key] = true
			}
		}
	}
	return int32(len(seen))
}

// URLs are the addresses an Ingress serves: for each rule and path,
// scheme://host/path, https when the host is in a tls entry; a rule
// without a host is served at each load balancer address. Sorted, unique.
func URLs(ing *networkingv1.Ingress) []string {
	tls := map[string]bool{}
	for _, t := range ing.Spec.TLS {
		for _, h := range t.Hosts {
			tls[h] = true
		}
	}
	var lb []string
	for _, l := range ing.Status.LoadBalancer.Ingress {
		if l.Hostname != "" {
			lb = append(lb, l.Hostname)
		} else if l.IP != "" {
			lb = append(lb, l.IP)
		}
	}
	set := map[string]bool{}
	add := func(host, path string, secure bool) {
		scheme := "http"
		if secure {
			scheme = "https"
		}
		if path == "" {
			path = "/"
		}
		if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
			host = "[" + host + "]"
		}
		set[scheme+"://"+host+path] = true
	}
	for _, rule := range ing.Spec.Rules {
		paths := []string{"/"}
		if rule.HTTP != nil && len(rule.HTTP.Paths) > 0 {
			paths = paths[:0]
			for _, p := range rule.HTTP.Paths {
				paths = append(paths, p.Path)
			}
		}
		hosts := []string{rule.Host}
		if rule.Host == "" {
			hosts = lb
		}
		for _, h := range hosts {
			for _, p := range paths {
				add(h, p, tls[h])
			}
		}
	}
	if len(ing.Spec.Rules) == 0 && ing.Spec.DefaultBackend != nil {
		for _, h := range lb {
			add(h, "/", false)
		}
	}
	urls := make([]string, 0, len(set))
	for u := range set {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	return urls
}

// childLines is one line per child the spec asks for (kubectl describe's
// status.children): its state from what this sync found and did, or why it is
// not there.
func childLines(obs synced, st *appsv1beta1.ApplicationStatus) *appsv1beta1.ApplicationChildrenStatus {
	lines := &appsv1beta1.ApplicationChildrenStatus{}
	for _, o := range obs.outcomes {
		if o.kind.slot == nil {
			continue // a revision Service: its problems are in Ready's message
		}
		var line string
		switch {
		case o.notOwned:
			line = "exists and is not controlled by this Application: left alone"
		case o.err != nil:
			line = "not applied: " + o.err.Error()
		case o.crdAbsent:
			line = "waiting for the Gateway API CRDs"
		case !o.present:
			continue
		default:
			line = o.kind.line(o.live, st)
		}
		*o.kind.slot(lines) = line
	}
	return lines
}

// RouteURLs are the addresses an HTTPRoute serves: http://hostname/path for
// each hostname and each rule's path match (Exact or PathPrefix; "/" when
// a rule matches no path). Sorted, unique; none without hostnames (the
// Gateway's listeners decide them).
func RouteURLs(route *gatewayv1.HTTPRoute) []string {
	paths := map[string]bool{}
	for _, rule := range route.Spec.Rules {
		if len(rule.Matches) == 0 {
			paths["/"] = true
		}
		for _, m := range rule.Matches {
			if m.Path != nil && m.Path.Value != nil && (m.Path.Type == nil || *m.Path.Type != gatewayv1.PathMatchRegularExpression) {
				paths[*m.Path.Value] = true
			} else {
				paths["/"] = true
			}
		}
	}
	if len(paths) == 0 {
		paths["/"] = true
	}
	var urls []string
	for _, h := range route.Spec.Hostnames {
		for p := range paths {
			urls = append(urls, "http://"+string(h)+p)
		}
	}
	return mergeURLs(nil, urls)
}

// mergeURLs is a and b, sorted, each once.
func mergeURLs(a, b []string) []string {
	out := append(append([]string(nil), a...), b...)
	sort.Strings(out)
	return slices.Compact(out)
}

// routeLine sums up an HTTPRoute: its URLs, and for each parent (Gateway)
// that reported on it, its Accepted and ResolvedRefs conditions.
func routeLine(route *gatewayv1.HTTPRoute) string {
	line := strings.Join(RouteURLs(route), " ")
	if line == "" {
		line = "no hostnames"
	}
	if traffic := routeTraffic(route); traffic != "" {
		line += "; canary traffic: " + traffic
	}
	if len(route.Status.Parents) == 0 {
		return line + "; not accepted by a Gateway yet"
	}
	for _, p := range route.Status.Parents {
		state := func(t string) string {
			if c := meta.FindStatusCondition(p.Conditions, t); c != nil {
				return string(c.Status)
			}
			return "Unknown"
		}
		line += fmt.Sprintf("; %s: Accepted=%s ResolvedRefs=%s", p.ParentRef.Name,
			state(string(gatewayv1.RouteConditionAccepted)), state(string(gatewayv1.RouteConditionResolvedRefs)))
	}
	return line
}
