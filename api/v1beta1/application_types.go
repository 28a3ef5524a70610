/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ApplicationSpec is a whole app: the MyDeployment that runs its pods and,
// optionally, the Service in front of them and the Ingress in front of that.
// Each child is named after the Application.
type ApplicationSpec struct {
	// Deployment is the Application's MyDeployment, in one of two forms. The
	// five-line form: image, replicas and port, expanded to one container
	// named after the Application, with that image and, if port is given, a
	// container port named "http". The full form: a MyDeployment spec with
	// its template (see `kubectl explain md.spec`). The webhook refuses both
	// at once. Left out, the selector is `app.kubernetes.io/name:
	// <application name>` and that label is added to the template's labels;
	// template labels left out are the selector's matchLabels. replicas left
	// out is not set by the Application at all, so that whoever scales the
	// MyDeployment (an HPA) owns it.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deployment",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Deployment ApplicationDeploymentSpec `json:"deployment"`

	// Service, when given, is the spec of a Service named after the
	// Application. Its selector defaults to the pods' selector, its ports to
	// the containers' ports (name, port = containerPort, targetPort = the
	// port's name or number). Removing it deletes the Service.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Service",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Service *ApplicationServiceSpec `json:"service,omitempty"`

	// Ingress, when given, is the spec of an Ingress named after the
	// Application, in front of its Service (so it needs `service`). A rule
	// without `http` routes `/` (Prefix) to the Service's first port, and an
	// Ingress without rules or defaultBackend gets that as its
	// defaultBackend. Removing it deletes the Ingress.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Ingress",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Ingress *ApplicationIngressSpec `json:"ingress,omitempty"`

	// Route, when given, is the spec of a Gateway API HTTPRoute named after
	// the Application, in front of its Service (so it needs `service`):
	// parentRefs (the Gateways), hostnames and rules; a rule without
	// backendRefs routes to the Service's first port, and rules left out are
	// one such rule for every path. It needs the Gateway API CRDs
	// (gateway.networking.k8s.io/v1); without them the Application says so
	// in its Ready condition (RouteCRDAbsent) and the route is made once they
	// are installed. Removing it deletes the HTTPRoute.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Route",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Route *ApplicationRouteSpec `json:"route,omitempty"`

	// Autoscaling, when given, makes an autoscaling/v2
	// HorizontalPodAutoscaler named after the Application that scales its
	// MyDeployment (through its scale subresource); the Application then
	// stops setting the MyDeployment's replicas (spec.deployment.replicas is
	// ignored: the HPA owns them, from the value they had). Removing it
	// deletes the HPA.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Autoscaling",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Autoscaling *ApplicationAutoscaling `json:"autoscaling,omitempty"`

	// DisruptionBudget, when given, makes a policy/v1 PodDisruptionBudget
	// named after the Application over its pods (the MyDeployment's
	// selector). Removing it deletes the PodDisruptionBudget.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Disruption Budget",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	DisruptionBudget *ApplicationDisruptionBudget `json:"disruptionBudget,omitempty"`
}

// ApplicationRouteSpec is the Application's HTTPRoute: an HTTPRoute spec,
// and the route's labels and annotations.
type ApplicationRouteSpec struct {
	// Labels and annotations of the HTTPRoute.
	// +optional
	Metadata *ChildMetadata `json:"metadata,omitempty"`

	gatewayv1.HTTPRouteSpec `json:",inline"`
}

// ApplicationAutoscaling is the Application's HorizontalPodAutoscaler.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="must not be greater than maxReplicas",fieldPath=".minReplicas"
type ApplicationAutoscaling struct {
	// The lower limit of replicas; defaults to 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// The upper limit of replicas.
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas"`
	// The pods' average CPU use the HPA aims at, in percent of their
	// requests. With neither target, the HPA aims at 80% CPU (its default).
	// +optional
	// +kubebuilder:validation:Minimum=1
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
	// The pods' average memory use the HPA aims at, in percent of their
	// requests.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TargetMemoryUtilizationPercentage *int32 `json:"targetMemoryUtilizationPercentage,omitempty"`
}

// ApplicationDisruptionBudget is the Application's PodDisruptionBudget: one
// of minAvailable and maxUnavailable.
// +kubebuilder:validation:XValidation:rule="has(self.minAvailable) != has(self.maxUnavailable)",message="give one of minAvailable and maxUnavailable"
type ApplicationDisruptionBudget struct {
	// Pods that must stay available during a voluntary disruption (an
	// eviction): a number or a percentage.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
	// Pods that may be unavailable during a voluntary disruption: a number
	// or a percentage.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// ChildMetadata is what the Application writes into a child's metadata
// besides its name, owner reference and ApplicationNameLabel. They are
// applied with the Application's field manager: a label or annotation
// removed here is removed from the child, one set on the child by someone
// else is left alone.
type ChildMetadata struct {
	// Labels of the child (not of its pods: those are the template's).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of the child, e.g. an Ingress class's or cert-manager's,
	// a load balancer's on the Service, the MyDeployment's opt-ins
	// (apps.mydeployment.io/partition, update-mode, respect-pdb).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ApplicationDeploymentSpec is the Application's MyDeployment: the
// five-line form (image, replicas, port) or the full form (a MyDeployment
// spec, whose fields it has, template included). Apart from image and port,
// every field is MyDeploymentSpec's, with its rules; selector and template
// may be left out.
//
// Cross-field rules checked at admission, as MyDeploymentSpec's (hack/crdpatch
// makes each hold when selector or template is left out):
// +kubebuilder:validation:XValidation:rule="(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="empty selector is invalid for a MyDeployment",fieldPath=".selector"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchLabels) || self.selector.matchLabels.all(k, has(self.template.metadata) && has(self.template.metadata.labels) && k in self.template.metadata.labels && self.template.metadata.labels[k] == self.selector.matchLabels[k])",message="`selector` does not match template `labels`",fieldPath=".template.metadata.labels"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchExpressions) || self.selector.matchExpressions.all(e, e.operator == 'In' ? (!has(e.values) || size(e.values) == 0 || (has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels && self.template.metadata.labels[e.key] in e.values)) : e.operator == 'NotIn' ? (!has(self.template.metadata) || !has(self.template.metadata.labels) || !(e.key in self.template.metadata.labels) || !has(e.values) || !(self.template.metadata.labels[e.key] in e.values)) : e.operator == 'Exists' ? (has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) : e.operator != 'DoesNotExist' || !has(self.template.metadata) || !has(self.template.metadata.labels) || !(e.key in self.template.metadata.labels))",message="`selector` does not match template `labels`",fieldPath=".template.metadata.labels"
// +kubebuilder:validation:XValidation:rule="!has(self.progressDeadlineSeconds) || self.progressDeadlineSeconds > (has(self.minReadySeconds) ? self.minReadySeconds : 0)",message="must be greater than minReadySeconds",fieldPath=".progressDeadlineSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec.restartPolicy) || self.template.spec.restartPolicy == 'Always'",message="Unsupported value: only \"Always\" is supported",fieldPath=".template.spec.restartPolicy"
type ApplicationDeploymentSpec struct {
	// Labels and annotations of the MyDeployment.
	// +optional
	Metadata *ChildMetadata `json:"metadata,omitempty"`

	// The five-line form: the image of the one container, named after the
	// Application. Not with template.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Image string `json:"image,omitempty"`

	// The five-line form: the container's port, named "http" (the Service's
	// port, if any, and the Ingress's backend). Not with template.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Port",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	Port int32 `json:"port,omitempty"`

	// Number of desired pods. Left out, the Application does not set the
	// MyDeployment's replicas (its default is 1).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Replicas *int32 `json:"replicas,omitempty"`

	// Label selector for pods. Existing pods selected by it are adopted by
	// this MyDeployment. It must match the pod template's labels and is
	// immutable after creation.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Pod"}
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Template describes the pods that will be created (the full form). Its
	// only allowed restartPolicy is Always. Not with image or port.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Template",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`

	// How pods are replaced, and how much history is kept: as a MyDeployment's.
	RolloutSpec `json:",inline"`
}

// ApplicationServiceSpec is the Application's Service: a Service spec, and
// the Service's labels and annotations.
type ApplicationServiceSpec struct {
	// Labels and annotations of the Service (a load balancer's, say).
	// +optional
	Metadata *ChildMetadata `json:"metadata,omitempty"`

	corev1.ServiceSpec `json:",inline"`
}

// ApplicationIngressSpec is the Application's Ingress: an Ingress spec, and
// the Ingress's labels and annotations.
type ApplicationIngressSpec struct {
	// Labels and annotations of the Ingress (a cert-manager issuer's, an
	// Ingress controller's).
	// +optional
	Metadata *ChildMetadata `json:"metadata,omitempty"`

	networkingv1.IngressSpec `json:",inline"`
}

// ApplicationServiceStatus is what the Application's Service reports.
type ApplicationServiceStatus struct {
	// The Service's cluster IP ("None" for a headless Service).
	// +optional
	ClusterIP string `json:"clusterIP,omitempty"`
	// Number of ready endpoints of the Service, counted over its
	// EndpointSlices (each address of a ready endpoint once).
	// +optional
	ReadyEndpoints int32 `json:"readyEndpoints"`
}

// ApplicationIngressStatus is what the Application's Ingress reports.
type ApplicationIngressStatus struct {
	// The load balancer's addresses, as the Ingress controller reports them.
	// +optional
	// +listType=atomic
	LoadBalancer []networkingv1.IngressLoadBalancerIngress `json:"loadBalancer,omitempty"`
}

// ApplicationChildrenStatus sums up each child in one line; a child the
// spec does not ask for has none.
type ApplicationChildrenStatus struct {
	// The MyDeployment: available, total and up-to-date pods.
	// +optional
	MyDeployment string `json:"myDeployment,omitempty"`
	// The Service: its cluster IP and ready endpoints.
	// +optional
	Service string `json:"service,omitempty"`
	// The Ingress: the URLs it serves.
	// +optional
	Ingress string `json:"ingress,omitempty"`
	// The HTTPRoute: its URLs, and whether its Gateways accepted it.
	// +optional
	HTTPRoute string `json:"httpRoute,omitempty"`
	// The HorizontalPodAutoscaler: its current and desired replicas, and
	// limits.
	// +optional
	HorizontalPodAutoscaler string `json:"horizontalPodAutoscaler,omitempty"`
	// The PodDisruptionBudget: healthy pods, and disruptions allowed.
	// +optional
	PodDisruptionBudget string `json:"podDisruptionBudget,omitempty"`
}

// ApplicationStatus is the observed state of the Application's children.
type ApplicationStatus struct {
	// The generation observed by the controller; set only after all
	// children were applied for it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation",xDescriptors={"urn:alm:descriptor:text"}
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// The MyDeployment's status.replicas.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Replicas int32 `json:"replicas,omitempty"`
	// The MyDeployment's status.readyReplicas.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ready Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// The MyDeployment's status.updatedReplicas.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Updated Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// The MyDeployment's status.availableReplicas.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Available Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// The pods' selector in string form, for the scale subresource.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`

	// The Service's cluster IP and ready endpoints; absent without a Service.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Service",xDescriptors={"urn:alm:descriptor:text"}
	Service *ApplicationServiceStatus `json:"service,omitempty"`

	// The Ingress's load balancer; absent without an Ingress.
	// +optional
	Ingress *ApplicationIngressStatus `json:"ingress,omitempty"`

	// The URLs the Ingress serves the app at: one per rule host and path
	// (https when the host is in the Ingress's tls), or at the load
	// balancer's address for a rule without a host; and the HTTPRoute's,
	// one per hostname and path.
	// +optional
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="URLs",xDescriptors={"urn:alm:descriptor:org.w3:link"}
	URLs []string `json:"urls,omitempty"`

	// One line per child the spec asks for: its state in a few words, as
	// `kubectl describe` shows it.
	// +optional
	Children *ApplicationChildrenStatus `json:"children,omitempty"`

	// Available and Progressing mirror the MyDeployment's; Ready is True
	// when every child is present, owned and available (the Service with a
	// ready endpoint).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.deployment.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=mdapp,categories=all
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.urls[0]`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Application",resources={{MyDeployment,v1beta1,""},{Service,v1,""},{Ingress,v1,""},{HTTPRoute,v1,""},{HorizontalPodAutoscaler,v2,""},{PodDisruptionBudget,v1,""}}

// Application is one resource for a whole app: a MyDeployment, and
// optionally a Service, an Ingress, an HTTPRoute, a HorizontalPodAutoscaler
// and a PodDisruptionBudget, all named after it and owned by it.
type Application struct {
	metav1.TypeMeta `json:",inline"`

	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Desired state: the children's specs.
	Spec ApplicationSpec `json:"spec"`

	// Most recently observed state of the children.
	// +optional
	Status ApplicationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ApplicationList contains a list of Application.
type ApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Application `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Application{}, &ApplicationList{})
}
