package v1beta1

// Application condition types. Available and Progressing mirror the
// MyDeployment's (same status, reason and message); Ready sums up the
// children.
const (
	// ApplicationAvailable mirrors the MyDeployment's Available.
	ApplicationAvailable = "Available"
	// ApplicationProgressing mirrors the MyDeployment's Progressing.
	ApplicationProgressing = "Progressing"
	// ApplicationReady is True when every child the spec asks for exists,
	// is ours and is up to date, the MyDeployment is Available and the
	// Service (if any) has a ready endpoint.
	ApplicationReady = "Ready"
	// ApplicationCapacityLimited is True while the route carries less to
	// the canary than its weight steps state ("weight 50%" with 3 of 10
	// pods Ready: 30%), absent otherwise.
	ApplicationCapacityLimited = "CapacityLimited"
)

// Application condition reasons.
const (
	// ReasonChildrenReady: Ready=True.
	ReasonChildrenReady = "ChildrenReady"
	// ReasonChildNotOwned: Ready=False, an object with a child's name and
	// kind exists and is not controlled by this Application; it is left
	// alone, and looked at again every minute.
	ReasonChildNotOwned = "ChildNotOwned"
	// ReasonChildApplyFailed: Ready=False, the API server refused a child
	// (quota, admission); the message carries its error.
	ReasonChildApplyFailed = "ChildApplyFailed"
	// ReasonDeploymentNotAvailable: Ready=False, the MyDeployment is not
	// (yet) Available.
	ReasonDeploymentNotAvailable = "DeploymentNotAvailable"
	// ReasonNoReadyEndpoints: Ready=False, the Service has no ready
	// endpoint (yet).
	ReasonNoReadyEndpoints = "NoReadyEndpoints"
	// ReasonRouteCRDAbsent: Ready=False, the spec asks for a route and the
	// Gateway API's HTTPRoute kind is not served (its CRDs are not
	// installed); the route is made once it is.
	ReasonRouteCRDAbsent = "RouteCRDAbsent"
	// ReasonDeploymentNotObserved: Available and Progressing are Unknown
	// until the MyDeployment reports them.
	ReasonDeploymentNotObserved = "DeploymentNotObserved"
	// ReasonCanaryPodsNotReady: CapacityLimited=True, the canary's Ready
	// pods' share is below the weight its steps state.
	ReasonCanaryPodsNotReady = "CanaryPodsNotReady"
)

// Application event reasons, one event per child write (or refusal).
const (
	// EventChildCreated: a child was created.
	EventChildCreated = "Created"
	// EventChildUpdated: a child's fields of ours were changed (a spec
	// change, or drift put back).
	EventChildUpdated = "Updated"
	// EventChildDeleted: a child no longer in the spec was deleted.
	EventChildDeleted = "Deleted"
	// EventChildNotOwned: an existing object of a child's name is not ours;
	// it is left alone (ReasonChildNotOwned).
	EventChildNotOwned = "ChildNotOwned"
	// EventChildApplyFailed: the API server refused a child.
	EventChildApplyFailed = "ChildApplyFailed"
	// EventTrafficShifted: the HTTPRoute's weights changed during a canary
	// (or it points at the one Service again); the note gives the weights.
	EventTrafficShifted = "TrafficShifted"
)

// Labels the Application controller writes.
const (
	// ApplicationNameLabel on each child (and, copied by the EndpointSlice
	// controller from the Service, on its EndpointSlices) names the
	// Application; the operator caches only Services, Ingresses and
	// EndpointSlices that carry it.
	ApplicationNameLabel = "apps.mydeployment.io/application"
	// AppNameLabel is the pods' default selector label:
	// `app.kubernetes.io/name: <application name>`.
	AppNameLabel = "app.kubernetes.io/name"
	// RouteRulesAnnotation on the HTTPRoute names (a hash) the rules of the
	// Application's spec.route it last wrote. HTTPRoute's rules are one
	// atomic list for server-side apply, so ownership cannot tell the
	// Application's rules from a filter someone added by hand: while the
	// annotation names the spec's rules, the Application writes back the
	// live rules, changing only the backendRefs to its Services; when the
	// spec's rules change, they replace the live ones.
	RouteRulesAnnotation = "apps.mydeployment.io/route-rules"
)
