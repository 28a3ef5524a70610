package v1beta1

import appsv1 "k8s.io/api/apps/v1"

// Condition types: Deployment's, with the same meaning.
const (
	// ConditionAvailable is True when at least replicas-maxUnavailable pods
	// have been ready for minReadySeconds.
	ConditionAvailable = appsv1.DeploymentAvailable
	// ConditionProgressing is True while a rollout makes progress or has
	// completed, False once it exceeded its progress deadline.
	ConditionProgressing = appsv1.DeploymentProgressing
	// ConditionReplicaFailure is True when a pod could not be created or
	// deleted; its message carries the API server's error.
	ConditionReplicaFailure = appsv1.DeploymentReplicaFailure
)

// Condition reasons: Deployment's words, so users and tools read them alike.
const (
	// ReasonMinimumReplicasAvailable: Available=True.
	ReasonMinimumReplicasAvailable = "MinimumReplicasAvailable"
	// ReasonMinimumReplicasUnavailable: Available=False.
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	// ReasonNewRevisionCreated: Progressing=True, a new update revision was recorded.
	ReasonNewRevisionCreated = "NewRevisionCreated"
	// ReasonRevisionUpdated: Progressing=True, pods of the update revision
	// were created or old ones removed (Deployment's ReplicaSetUpdated).
	ReasonRevisionUpdated = "RevisionUpdated"
	// ReasonFoundNewRevision: Progressing=True, the update revision already
	// existed (Deployment's FoundNewReplicaSet).
	ReasonFoundNewRevision = "FoundNewRevision"
	// ReasonNewRevisionAvailable: Progressing=True, the rollout completed.
	ReasonNewRevisionAvailable = "NewRevisionAvailable"
	// ReasonProgressDeadlineExceeded: Progressing=False, no progress for
	// progressDeadlineSeconds.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonPaused: Progressing=Unknown while spec.paused is true.
	ReasonPaused = "DeploymentPaused"
	// ReasonResumed: Progressing=Unknown right after spec.paused went false.
	ReasonResumed = "DeploymentResumed"
	// ReasonFailedCreate: ReplicaFailure=True, a pod create was refused.
	ReasonFailedCreate = "FailedCreate"
	// ReasonFailedDelete: ReplicaFailure=True, a pod delete was refused.
	ReasonFailedDelete = "FailedDelete"
	// ReasonInvalidSelector: ReplicaFailure=True, the selector cannot be
	// used or does not select the template's labels (only possible for
	// objects admission did not check: stored before its rules, or created
	// with the webhook off).
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonInvalidStrategy: ReplicaFailure=True, the strategy cannot be
	// resolved to pod counts (e.g. a maxSurge percentage of spec.replicas
	// beyond the int32 range); nothing is created or deleted until it changes.
	ReasonInvalidStrategy = "InvalidStrategy"
)

// Labels and annotations the controller writes.
const (
	// RevisionLabel on a pod names the ControllerRevision it was created
	// from, as on a StatefulSet's pods.
	RevisionLabel = appsv1.ControllerRevisionHashLabelKey
	// PodTemplateHashLabel on a pod carries the revision's hash, as on a
	// Deployment's pods.
	PodTemplateHashLabel = appsv1.DefaultDeploymentUniqueLabelKey
	// RevisionAnnotation on the MyDeployment holds the number of its update
	// revision, like deployment.kubernetes.io/revision.
	RevisionAnnotation = "apps.mydeployment.io/revision"
	// DesiredReplicasAnnotation and MaxReplicasAnnotation on the MyDeployment
	// record what its pods were last sized for: spec.replicas and
	// replicas+maxSurge, as deployment.kubernetes.io/desired-replicas and
	// max-replicas do on a Deployment's ReplicaSets. A scale while several
	// revisions run is then spread over them proportionally, as a
	// Deployment's is. Written with the revision annotation, and otherwise
	// only when several revisions have pods.
	DesiredReplicasAnnotation = "apps.mydeployment.io/desired-replicas"
	MaxReplicasAnnotation     = "apps.mydeployment.io/max-replicas"
	// ChangeCauseAnnotation is copied from the MyDeployment to the revision
	// it creates, as kubectl rollout history shows it.
	ChangeCauseAnnotation = "kubernetes.io/change-cause"
)
