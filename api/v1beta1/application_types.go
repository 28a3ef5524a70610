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
)

// ApplicationSpec is a whole app: the MyDeployment that runs its pods and,
// optionally, the Service in front of them and the Ingress in front of that.
// Each child is named after the Application.
type ApplicationSpec struct {
	// Deployment is the spec of the Application's MyDeployment (see
	// `kubectl explain md.spec`). Left out, the selector is
	// `app.kubernetes.io/name: <application name>` and that label is added
	// to the template's labels; template labels left out are the selector's
	// matchLabels. replicas left out is not set by the Application at all,
	// so that whoever scales the MyDeployment (an HPA) owns it.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deployment",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Deployment MyDeploymentSpec `json:"deployment"`

	// Service, when given, is the spec of a Service named after the
	// Application. Its selector defaults to the pods' selector, its ports to
	// the containers' ports (name, port = containerPort, targetPort = the
	// port's name or number). Removing it deletes the Service.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Service",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Service *corev1.ServiceSpec `json:"service,omitempty"`

	// Ingress, when given, is the spec of an Ingress named after the
	// Application, in front of its Service (so it needs `service`). A rule
	// without `http` routes `/` (Prefix) to the Service's first port, and an
	// Ingress without rules or defaultBackend gets that as its
	// defaultBackend. Removing it deletes the Ingress.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Ingress",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Ingress *networkingv1.IngressSpec `json:"ingress,omitempty"`
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
	// balancer's address for a rule without a host.
	// +optional
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="URLs",xDescriptors={"urn:alm:descriptor:org.w3:link"}
	URLs []string `json:"urls,omitempty"`

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
// +kubebuilder:resource:shortName=app,categories=all
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.urls[0]`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Application",resources={{MyDeployment,v1beta1,""},{Service,v1,""},{Ingress,v1,""}}

// Application is one resource for a whole app: a MyDeployment, and
// optionally a Service and an Ingress, all named after it and owned by it.
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
