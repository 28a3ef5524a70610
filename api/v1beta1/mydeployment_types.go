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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MyDeploymentSpec is apps/v1 DeploymentSpec, field for field: same names,
// types, JSON tags, defaults and meaning.
//
// Cross-field rules checked at admission (CEL; each names the field):
// +kubebuilder:validation:XValidation:rule="(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="empty selector is invalid for a MyDeployment",fieldPath=".selector"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchLabels) || self.selector.matchLabels.all(k, has(self.template.metadata) && has(self.template.metadata.labels) && k in self.template.metadata.labels && self.template.metadata.labels[k] == self.selector.matchLabels[k])",message="`selector` does not match template `labels`",fieldPath=".template.metadata.labels"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchExpressions) || self.selector.matchExpressions.all(e, e.operator == 'In' ? (!has(e.values) || size(e.values) == 0 || (has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels && self.template.metadata.labels[e.key] in e.values)) : e.operator == 'NotIn' ? (!has(self.template.metadata) || !has(self.template.metadata.labels) || !(e.key in self.template.metadata.labels) || !has(e.values) || !(self.template.metadata.labels[e.key] in e.values)) : e.operator == 'Exists' ? (has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) : e.operator != 'DoesNotExist' || !has(self.template.metadata) || !has(self.template.metadata.labels) || !(e.key in self.template.metadata.labels))",message="`selector` does not match template `labels`",fieldPath=".template.metadata.labels"
// +kubebuilder:validation:XValidation:rule="!has(self.progressDeadlineSeconds) || self.progressDeadlineSeconds > (has(self.minReadySeconds) ? self.minReadySeconds : 0)",message="must be greater than minReadySeconds",fieldPath=".progressDeadlineSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec.restartPolicy) || self.template.spec.restartPolicy == 'Always'",message="Unsupported value: only \"Always\" is supported",fieldPath=".template.spec.restartPolicy"
type MyDeploymentSpec struct {
	// Number of desired pods. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Replicas *int32 `json:"replicas,omitempty"`

	// Label selector for pods. Existing pods selected by it are adopted by
	// this MyDeployment. It must match the pod template's labels and is
	// immutable after creation.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Pod"}
	Selector *metav1.LabelSelector `json:"selector"`

	// Template describes the pods that will be created. Its only allowed
	// restartPolicy is Always.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Template",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Template corev1.PodTemplateSpec `json:"template"`

	// How pods are replaced, and how much history is kept.
	RolloutSpec `json:",inline"`
}

// RolloutSpec is how pods are replaced and how much history is kept: the
// fields of the apps/v1 Deployment spec beside replicas, selector and
// template, with their defaults and validation. MyDeploymentSpec and an
// Application's spec.deployment share it.
type RolloutSpec struct {
	// The deployment strategy to use to replace existing pods with new ones.
	// Defaults to RollingUpdate; a RollingUpdate without a rollingUpdate
	// block rolls out with maxSurge 25% and maxUnavailable 25%, Deployment's
	// defaults. No rollingUpdate block is stored by default, so that changing
	// the type to Recreate (kubectl apply, client- or server-side) needs no
	// block to be removed.
	// +optional
	// +patchStrategy=retainKeys
	// +kubebuilder:default={type: "RollingUpdate"}
	// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'Recreate' || !has(self.rollingUpdate)",message="may not be specified when strategy `type` is 'Recreate'",fieldPath=".rollingUpdate"
	// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdate) || !has(self.rollingUpdate.maxSurge) || (type(self.rollingUpdate.maxSurge) == int ? int(self.rollingUpdate.maxSurge) >= 0 : string(self.rollingUpdate.maxSurge).matches('^[0-9]+%$'))",message="a valid value is a non-negative integer or a percent string like '25%'",fieldPath=".rollingUpdate.maxSurge"
	// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdate) || !has(self.rollingUpdate.maxUnavailable) || (type(self.rollingUpdate.maxUnavailable) == int ? int(self.rollingUpdate.maxUnavailable) >= 0 : string(self.rollingUpdate.maxUnavailable).matches('^[0-9]+%$'))",message="a valid value is a non-negative integer or a percent string like '25%'",fieldPath=".rollingUpdate.maxUnavailable"
	// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdate) || !has(self.rollingUpdate.maxUnavailable) || type(self.rollingUpdate.maxUnavailable) == int || !string(self.rollingUpdate.maxUnavailable).matches('^[0-9]+%$') || (!string(self.rollingUpdate.maxUnavailable).matches('^0*[1-9][0-9]{3,}%$') && int(string(self.rollingUpdate.maxUnavailable).replace('%', '')) <= 100)",message="must not be greater than 100%",fieldPath=".rollingUpdate.maxUnavailable"
	// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdate) || !has(self.rollingUpdate.maxUnavailable) || type(self.rollingUpdate.maxUnavailable) != int || int(self.rollingUpdate.maxUnavailable) <= 2147483647",message="must not be greater than 2147483647",fieldPath=".rollingUpdate.maxUnavailable"
	// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdate) || !has(self.rollingUpdate.maxSurge) || (type(self.rollingUpdate.maxSurge) == int ? int(self.rollingUpdate.maxSurge) <= 2147483647 : (!string(self.rollingUpdate.maxSurge).matches('^[0-9]+%$') || (!string(self.rollingUpdate.maxSurge).matches('^0*[1-9][0-9]{10,}%$') && int(string(self.rollingUpdate.maxSurge).replace('%', '')) <= 2147483647)))",message="must not be greater than 2147483647 or 2147483647%",fieldPath=".rollingUpdate.maxSurge"
	// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdate) || !has(self.rollingUpdate.maxSurge) || !has(self.rollingUpdate.maxUnavailable) || !((type(self.rollingUpdate.maxSurge) == int ? int(self.rollingUpdate.maxSurge) == 0 : string(self.rollingUpdate.maxSurge).matches('^0+%$')) && (type(self.rollingUpdate.maxUnavailable) == int ? int(self.rollingUpdate.maxUnavailable) == 0 : string(self.rollingUpdate.maxUnavailable).matches('^0+%$')))",message="may not be 0 when `maxSurge` is 0",fieldPath=".rollingUpdate.maxUnavailable"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Update Strategy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:updateStrategy"}
	Strategy appsv1.DeploymentStrategy `json:"strategy,omitempty" patchStrategy:"retainKeys"`

	// Minimum number of seconds for which a newly created pod should be ready
	// without any of its containers crashing, for it to be considered
	// available. Defaults to 0 (available as soon as it is ready).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Min Ready Seconds",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:advanced"}
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// The number of old ControllerRevisions to retain to allow rollback.
	// Defaults to 10.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Revision History Limit",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:advanced"}
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Indicates that the MyDeployment is paused: template changes do not
	// roll out; scaling still happens.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Paused",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Paused bool `json:"paused,omitempty"`

	// The maximum time in seconds for a MyDeployment to make progress before
	// it is considered failed (Progressing=False, ProgressDeadlineExceeded).
	// Defaults to 600.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Progress Deadline Seconds",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:advanced"}
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// MyDeploymentStatus is the observed state: the fields of DeploymentStatus
// and StatefulSetStatus that apply to pods managed without ReplicaSets.
type MyDeploymentStatus struct {
	// The generation observed by the controller; set only after a
	// successful sync of that generation.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation",xDescriptors={"urn:alm:descriptor:text"}
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Total number of non-terminating pods targeted by this MyDeployment.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Replicas int32 `json:"replicas,omitempty"`

	// Total number of non-terminating pods with a Ready condition.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ready Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Total number of non-terminating pods ready for at least minReadySeconds.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Available Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// Total number of non-terminating pods created from updateRevision.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Updated Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// Total number of non-terminating pods created from currentRevision.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Current Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	CurrentReplicas int32 `json:"currentReplicas,omitempty"`

	// Total number of terminating pods (deletionTimestamp set, not yet
	// Succeeded or Failed).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Terminating Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	TerminatingReplicas *int32 `json:"terminatingReplicas,omitempty"`

	// Total number of pods still needed for the MyDeployment to be 100%
	// available: desired replicas minus availableReplicas.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Unavailable Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`

	// Name of the ControllerRevision that the pods of the last completed
	// rollout were created from.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Current Revision",xDescriptors={"urn:alm:descriptor:text"}
	CurrentRevision string `json:"currentRevision,omitempty"`

	// Name of the ControllerRevision of the pod template in spec: new pods
	// are created from it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Update Revision",xDescriptors={"urn:alm:descriptor:text"}
	UpdateRevision string `json:"updateRevision,omitempty"`

	// Count of hash collisions of ControllerRevision names; part of the
	// hash so that a collision produces a new name.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Collision Count",xDescriptors={"urn:alm:descriptor:text"}
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// The selector in string form, for the scale subresource (kubectl
	// scale, HorizontalPodAutoscaler).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Label Selector",xDescriptors={"urn:alm:descriptor:text"}
	LabelSelector string `json:"labelSelector,omitempty"`

	// The latest available observations of the MyDeployment's state, with
	// the types and reasons of Deployment's conditions.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []appsv1.DeploymentCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=md,categories=all
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Up-to-date",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="MyDeployment",resources={{Pod,v1,""},{ControllerRevision,v1,""}}

// MyDeployment is a Deployment whose controller manages Pods directly,
// without ReplicaSets, and records each pod template version in a
// ControllerRevision.
type MyDeployment struct {
	metav1.TypeMeta `json:",inline"`

	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Desired state: the apps/v1 Deployment spec.
	Spec MyDeploymentSpec `json:"spec"`

	// Most recently observed state.
	// +optional
	Status MyDeploymentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// MyDeploymentList contains a list of MyDeployment.
type MyDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MyDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MyDeployment{}, &MyDeploymentList{})
}
