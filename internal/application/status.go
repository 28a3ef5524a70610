package application

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// observed is what one reconcile found: each child's outcome, in the order
// MyDeployment, Service, Ingress, and the Service's EndpointSlices.
type observed struct {
	outcomes       []outcome
	endpointSlices []discoveryv1.EndpointSlice
}

func (o observed) find(kind string) *outcome {
	for i := range o.outcomes {
		if o.outcomes[i].kind == kind {
			return &o.outcomes[i]
		}
	}
	return nil
}

func (o observed) summary() []string {
	var s []string
	for _, c := range o.outcomes {
		switch {
		case c.notOwned:
			s = append(s, c.kind+": not ours")
		case c.err != nil:
			s = append(s, c.kind+": "+c.err.Error())
		case c.present:
			s = append(s, c.kind+": applied")
		default:
			s = append(s, c.kind+": absent")
		}
	}
	return s
}

// computeStatus is the Application's status from what was observed: the
// MyDeployment's counters and its Available and Progressing conditions, the
// Service's cluster IP and ready endpoints, the Ingress's URLs and load
// balancer, and Ready. observedGeneration moves only when every child was
// synced. Conditions keep their lastTransitionTime while unchanged.
func computeStatus(app *appsv1beta1.Application, obs observed) appsv1beta1.ApplicationStatus {
	st := appsv1beta1.ApplicationStatus{
		ObservedGeneration: app.Status.ObservedGeneration,
		Conditions:         append([]metav1.Condition(nil), app.Status.Conditions...),
	}
	if sel, err := metav1.LabelSelectorAsSelector(DeploymentSpec(app).Selector); err == nil {
		st.LabelSelector = sel.String()
	}
	var problems []string
	reason := appsv1beta1.ReasonChildrenReady
	for _, o := range obs.outcomes {
		switch {
		case o.notOwned:
			problems = append(problems, fmt.Sprintf("%s %s exists and is not controlled by this Application; it is left alone", o.kind, app.Name))
			reason = appsv1beta1.ReasonChildNotOwned
		case o.err != nil:
			problems = append(problems, o.err.Error())
			if reason != appsv1beta1.ReasonChildNotOwned {
				reason = appsv1beta1.ReasonChildApplyFailed
			}
		case o.crdAbsent:
			problems = append(problems, fmt.Sprintf("%s %s: the Gateway API CRDs are not installed (gateway.networking.k8s.io/v1 %s is not served); it is made once they are",
				o.kind, app.Name, o.kind))
			if reason == appsv1beta1.ReasonChildrenReady {
				reason = appsv1beta1.ReasonRouteCRDAbsent
			}
		}
	}
	if len(problems) == 0 {
		st.ObservedGeneration = app.Generation
	}

	mirrored := false
	if o := obs.find("MyDeployment"); o != nil && o.present {
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
		if !deploymentAvailable(md) && len(problems) == 0 {
			reason = appsv1beta1.ReasonDeploymentNotAvailable
			problems = append(problems, fmt.Sprintf("MyDeployment %s is not available: %d of %d pods available",
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

	if o := obs.find("Service"); o != nil && o.present {
		svc := o.live.(*corev1.Service)
		st.Service = &appsv1beta1.ApplicationServiceStatus{ClusterIP: svc.Spec.ClusterIP, ReadyEndpoints: readyEndpoints(obs.endpointSlices)}
		if st.Service.ReadyEndpoints == 0 && len(problems) == 0 {
			reason = appsv1beta1.ReasonNoReadyEndpoints
			problems = append(problems, fmt.Sprintf("Service %s has no ready endpoint", app.Name))
		}
	}
	if o := obs.find("Ingress"); o != nil && o.present {
		ing := o.live.(*networkingv1.Ingress)
		st.Ingress = &appsv1beta1.ApplicationIngressStatus{LoadBalancer: ing.Status.LoadBalancer.Ingress}
		st.URLs = URLs(ing)
	}

	if o := obs.find("HTTPRoute"); o != nil && o.present {
		st.URLs = mergeURLs(st.URLs, RouteURLs(o.live.(*gatewayv1.HTTPRoute)))
	}
	st.Children = childLines(app, obs, st)

	ready := metav1.Condition{Type: appsv1beta1.ApplicationReady, Status: metav1.ConditionTrue, Reason: reason,
		Message: "every child is present and available", ObservedGeneration: app.Generation}
	if len(problems) > 0 {
		ready.Status, ready.Message = metav1.ConditionFalse, strings.Join(problems, "; ")
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	return st
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
// status.children): its state from what this sync observed, or why it is
// not there.
func childLines(app *appsv1beta1.Application, obs observed, st appsv1beta1.ApplicationStatus) *appsv1beta1.ApplicationChildrenStatus {
	lines := &appsv1beta1.ApplicationChildrenStatus{}
	for _, o := range obs.outcomes {
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
			line = presentLine(o.live, st)
		}
		switch o.kind {
		case "MyDeployment":
			lines.MyDeployment = line
		case "Service":
			lines.Service = line
		case "Ingress":
			lines.Ingress = line
		case "HTTPRoute":
			lines.HTTPRoute = line
		case "HorizontalPodAutoscaler":
			lines.HorizontalPodAutoscaler = line
		case "PodDisruptionBudget":
			lines.PodDisruptionBudget = line
		}
	}
	return lines
}

// presentLine sums up a child the Application applied.
func presentLine(live client.Object, st appsv1beta1.ApplicationStatus) string {
	switch c := live.(type) {
	case *appsv1beta1.MyDeployment:
		desired := int32(1)
		if c.Spec.Replicas != nil {
			desired = *c.Spec.Replicas
		}
		return fmt.Sprintf("%d/%d pods available, %d up to date", c.Status.AvailableReplicas, desired, c.Status.UpdatedReplicas)
	case *corev1.Service:
		ready := int32(0)
		if st.Service != nil {
			ready = st.Service.ReadyEndpoints
		}
		return fmt.Sprintf("%s %s, %d ready endpoints", c.Spec.Type, c.Spec.ClusterIP, ready)
	case *networkingv1.Ingress:
		if len(st.URLs) == 0 {
			return "no URL yet (no host, and no load balancer address)"
		}
		return strings.Join(st.URLs, " ")
	case *gatewayv1.HTTPRoute:
		return routeLine(c)
	case *autoscalingv2.HorizontalPodAutoscaler:
		minimum := int32(1)
		if c.Spec.MinReplicas != nil {
			minimum = *c.Spec.MinReplicas
		}
		return fmt.Sprintf("%d replicas, %d desired, between %d and %d", c.Status.CurrentReplicas, c.Status.DesiredReplicas,
			minimum, c.Spec.MaxReplicas)
	case *policyv1.PodDisruptionBudget:
		return fmt.Sprintf("%d/%d pods healthy, %d disruptions allowed", c.Status.CurrentHealthy, c.Status.DesiredHealthy,
			c.Status.DisruptionsAllowed)
	}
	return "applied"
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
