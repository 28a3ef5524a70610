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

// Behaviour beyond Deployment, each opted into by an annotation on the
// MyDeployment or a label on a pod and off without it: the spec stays
// Deployment's, field for field. internal/optin parses and validates them;
// the webhook refuses a bad value with a message naming the annotation.
const (
	// PartitionAnnotation ("<n>" or "<p>%", percent of spec.replicas
	// rounded up) holds that many pods on the current revision during a
	// RollingUpdate: a canary. "0" or no annotation completes the rollout.
	// Refused with strategy Recreate.
	PartitionAnnotation = "apps.mydeployment.io/partition"
	// SpecifiedDeleteLabel ("true") on a pod of the MyDeployment makes it
	// the first to go: deleted first on a scale-down, otherwise replaced
	// (a new pod first where maxSurge allows). On a pod it does not own it
	// does nothing.
	SpecifiedDeleteLabel = "apps.mydeployment.io/specified-delete"
	// RespectPDBAnnotation ("true" or "false") makes a rollout and a
	// specified delete remove pods through the Eviction API, so that
	// PodDisruptionBudgets hold. Scale-down stays a plain delete.
	RespectPDBAnnotation = "apps.mydeployment.io/respect-pdb"
	// UpdateModeAnnotation says how a RollingUpdate moves a pod to a new
	// template: UpdateModeRecreate (the default, what a Deployment does:
	// a new pod replaces it) or UpdateModeInPlaceIfPossible (a change of
	// container images, container resources or template labels and
	// annotations is applied to the running pod; anything else is
	// recreated). Refused with strategy Recreate.
	UpdateModeAnnotation = "apps.mydeployment.io/update-mode"
	// RolloutOnConfigChangeAnnotation ("true" or "false") makes the data of
	// the ConfigMaps and Secrets the pod template references part of its
	// revision: a change of their data is a new revision and a rollout under
	// the object's strategy (internal/configref finds the references).
	RolloutOnConfigChangeAnnotation = "apps.mydeployment.io/rollout-on-config-change"
	// ConfigHashAnnotation is set, with RolloutOnConfigChangeAnnotation, on
	// the pod template a revision records (never on the MyDeployment's
	// spec), and so on its pods: the ConfigMaps and Secrets the template
	// references, each with a hash of its data, sorted
	// ("configmap/app=1a2b3c4d,secret/db=5e6f7a8b").
	ConfigHashAnnotation = "apps.mydeployment.io/config-hash"
	// UpdateModeRecreate replaces pods, as a Deployment does.
	UpdateModeRecreate = "Recreate"
	// UpdateModeInPlaceIfPossible updates pods in place where the template
	// change allows it.
	UpdateModeInPlaceIfPossible = "InPlaceIfPossible"
	// InPlaceUpdateReadyCondition is the readiness gate every pod created
	// under UpdateModeInPlaceIfPossible carries, and the pod condition the
	// controller owns for it: True while the pod is not being updated in
	// place, False from just before an in-place update until the pod
	// runs the new template, so the pod leaves Service endpoints before
	// its containers restart (OpenKruise CloneSet's InPlaceUpdateReady).
	InPlaceUpdateReadyCondition = "apps.mydeployment.io/InPlaceUpdateReady"
	// CanaryStepsAnnotation lists the steps of a canary rollout, comma
	// separated: a size ("<n>" pods or "<p>%" of spec.replicas, rounded
	// up) moves that many pods to the update revision and ends when they
	// are available; "pause <duration>" waits; "pause" waits for
	// CanaryPromoteAnnotation. E.g. "1, pause 30s, 25%, pause, 100%".
	// Refused with strategy Recreate and beside PartitionAnnotation.
	CanaryStepsAnnotation = "apps.mydeployment.io/canary-steps"
	// CanaryStepAnnotation is written by the controller: the step a canary
	// rollout is at, for which update revision, and when a timed pause
	// began (JSON, {"revision":"web-5d8f","step":3,"pausedAt":"..."};
	// step counts from 1). The plugin reads it.
	CanaryStepAnnotation = "apps.mydeployment.io/canary-step"
	// CanaryPromoteAnnotation ends one step of a canary rollout:
	// "<revision>/<step>" ends that step if the rollout is at it (so a
	// repeated or stale promote never skips two steps), "<revision>/full"
	// ends every remaining step. Written by `rollout promote [--full]`.
	CanaryPromoteAnnotation = "apps.mydeployment.io/canary-promote"
	// OnFailureAnnotation says what a RollingUpdate does when it exceeds
	// spec.progressDeadlineSeconds: OnFailureContinue (the default, what a
	// Deployment does: report ProgressDeadlineExceeded and keep going) or
	// OnFailureAbort (every pod goes back to the current revision, within
	// maxSurge and maxUnavailable, in place where the update mode allows;
	// Progressing=False, ReasonRolloutAborted). The spec is not rewritten:
	// the rollout stays aborted until the template changes again or
	// RetriedAtAnnotation restarts it. Refused with strategy Recreate.
	OnFailureAnnotation = "apps.mydeployment.io/on-failure"
	// OnFailureContinue keeps the rollout going past its deadline, as a Deployment does.
	OnFailureContinue = "Continue"
	// OnFailureAbort moves every pod back to the current revision once the
	// rollout exceeds its progress deadline.
	OnFailureAbort = "Abort"
	// AbortedRevisionAnnotation is written by the controller, never by a
	// user: the name of the update revision whose rollout it aborted
	// (OnFailureAbort). It is the abort's record: kept in metadata, not
	// status, so that a status lost or restored without it cannot resume a
	// rollout known to fail. It holds while it names the update revision;
	// a new template makes it stale and the controller removes it.
	AbortedRevisionAnnotation = "apps.mydeployment.io/aborted-revision"
	// RetriedAtAnnotation (RFC 3339, set with AbortedRevisionAnnotation
	// removed by `kubectl mydeployment rollout retry`) starts an aborted
	// rollout over: the progress deadline runs again from then, and a
	// deadline verdict older than it never aborts.
	RetriedAtAnnotation = "apps.mydeployment.io/retried-at"
	// DrainAnnotation ("SurgeFirst") replaces a pod on a node being drained
	// (cordoned, or tainted for removal by an autoscaler: TaintToBeDeleted,
	// TaintKarpenterDisrupted) make-before-break: a new pod first, within
	// maxSurge but at least one, and the old pod removed once Replicas
	// pods are available without it. Refused with strategy Recreate. It
	// needs the manager to list and watch Nodes.
	DrainAnnotation = "apps.mydeployment.io/drain"
	// DrainSurgeFirst is DrainAnnotation's one value.
	DrainSurgeFirst = "SurgeFirst"
	// TaintToBeDeleted is the NoSchedule taint the Cluster Autoscaler puts
	// on a node it is about to remove.
	TaintToBeDeleted = "ToBeDeletedByClusterAutoscaler"
	// TaintKarpenterDisrupted is the NoSchedule taint Karpenter puts on a
	// node it is disrupting.
	TaintKarpenterDisrupted = "karpenter.sh/disrupted"
)

// Reasons of behaviour beyond Deployment.
const (
	// ReasonPartitionAvailable: Progressing=True, the rollout went as far
	// as the partition lets it (every pod available, the partition's pods
	// on the current revision, the others updated); it is held there, not
	// failing: no progress deadline applies. The message says how many
	// pods are updated, e.g. "2 of 10 pods updated, 8 held by partition".
	ReasonPartitionAvailable = "PartitionAvailable"
	// ReasonInvalidAnnotation: ReplicaFailure=True, an opt-in annotation
	// has a value that can never work (only possible for objects admission
	// did not check); nothing is created or deleted until it changes.
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonCanaryPaused: Progressing=True, a canary rollout is at a pause
	// step with every pod available: waiting, not failing, so no progress
	// deadline runs. The message names the step, e.g. "step 3 of 7:
	// paused until promote".
	ReasonCanaryPaused = "CanaryPaused"
	// ReasonWeightHolds: Progressing=True, a canary rollout with weight
	// steps is at a size step beyond the pods its stated weight lets
	// through (a scale made it so): held with every pod available, no
	// progress deadline running, until a scale or an edit of the steps.
	// The message names the step and what the stable side keeps.
	ReasonWeightHolds = "WeightHolds"
	// ReasonRolloutAborted: Progressing=False, the rollout exceeded its
	// progress deadline with OnFailureAbort: every pod goes (or went) back
	// to the current revision. The message names the aborted revision.
	ReasonRolloutAborted = "RolloutAborted"
	// ReasonRolloutRetried: Progressing=True, `rollout retry` started an
	// aborted rollout over (RetriedAtAnnotation); the deadline runs again.
	ReasonRolloutRetried = "RolloutRetried"
	// ReasonDrainAccessDenied: ReplicaFailure=True, the object opts into
	// DrainAnnotation but the manager may not list and watch Nodes, so it
	// cannot see drains; everything else works.
	ReasonDrainAccessDenied = "DrainAccessDenied"
	// ReasonConfigMissing: ReplicaFailure=True (and a warning event of this
	// reason, once per set of missing objects), a ConfigMap or Secret the
	// pod template references (not optional) does not exist, under
	// RolloutOnConfigChangeAnnotation; the message names it. No new
	// revision is made until it exists: pods are created and removed for
	// the update revision status names, as if the template were unchanged.
	ReasonConfigMissing = "ConfigMissing"
	// ReasonConfigAccessDenied: ReplicaFailure=True (and one warning event
	// of this reason), the object opts into RolloutOnConfigChangeAnnotation
	// but the manager may not get, list and watch ConfigMaps and Secrets in
	// its namespace; the message names what is denied. As with
	// ReasonConfigMissing no new revision is made until access is granted
	// (asked again every 15 s); every other object reconciles as before.
	ReasonConfigAccessDenied = "ConfigAccessDenied"
)

// Event reasons of behaviour beyond Deployment.
const (
	// EventEvicted: pods were removed through the Eviction API
	// (RespectPDBAnnotation).
	EventEvicted = "Evicted"
	// EventEvictionRefused: an eviction was refused (429) because of a
	// PodDisruptionBudget, named in the message; once per refusal spell,
	// not once per retry.
	EventEvictionRefused = "EvictionRefused"
	// EventPartitionHeld: the rollout reached its partition and is held.
	EventPartitionHeld = "PartitionHeld"
	// EventInPlaceUpdate: pods began an in-place update to a revision
	// (UpdateModeInPlaceIfPossible); one event per sync, with the count.
	EventInPlaceUpdate = "InPlaceUpdate"
	// EventInPlaceUpdateFailed: a pod's in-place update was refused or did
	// not finish in time; the pod is replaced. The message says why.
	EventInPlaceUpdateFailed = "InPlaceUpdateFailed"
	// EventCanaryStep: a canary rollout began a step; one event per step.
	EventCanaryStep = "CanaryStep"
	// EventRolloutAborted (Warning): the rollout to the revision the
	// message names exceeded its deadline and is aborted; once per abort.
	EventRolloutAborted = "RolloutAborted"
	// EventDrainReplaced: a pod on a draining node was removed once its
	// replacement was available (DrainAnnotation); one event per pod.
	EventDrainReplaced = "DrainReplaced"
)

// Moving a running Deployment's pods to a MyDeployment and back, with no
// pod restarted (`kubectl mydeployment migrate` and `eject`, docs/migrate.md).
const (
	// AdoptFromAnnotation ("Deployment/<name>", set only when the
	// MyDeployment is created, as `kubectl mydeployment migrate` does)
	// makes the MyDeployment take over that Deployment's pods: while the
	// Deployment or one of its ReplicaSets exists, or a ReplicaSet of it
	// controls a pod the selector matches, the controller creates and
	// deletes no pod (Progressing reason ReasonWaitingForHandOver) and
	// records the revision each ReplicaSet's pods become
	// (AdoptRevisionsAnnotation); once they are gone it adopts the
	// orphaned pods into those revisions, then removes both annotations.
	AdoptFromAnnotation = "apps.mydeployment.io/adopt-from"
	// AdoptRevisionsAnnotation is written by the controller while
	// AdoptFromAnnotation is set, never by a user: JSON mapping the
	// pod-template-hash of each ReplicaSet of the Deployment that has pods
	// to the name of the ControllerRevision its pods are adopted into
	// ({"7d9f8c6b5":"web-5d8f7c9b4"}), recorded while the ReplicaSet still
	// exists (its template is the revision's). Its presence, even "{}",
	// says the Deployment was seen. The plugin deletes the ReplicaSets
	// only once every one with pods is in it.
	AdoptRevisionsAnnotation = "apps.mydeployment.io/adopt-revisions"
	// EjectFinalizer is put by `kubectl mydeployment eject` on the
	// MyDeployment it deletes with --cascade=orphan: the object, and so
	// the spec the Deployment is made from, stays readable until the
	// Deployment owns the pods; then the plugin removes it. The controller
	// does nothing for an object being deleted.
	EjectFinalizer = "apps.mydeployment.io/eject"
)

// Reasons of the hand-over from a Deployment (AdoptFromAnnotation).
const (
	// ReasonWaitingForHandOver: Progressing=Unknown while AdoptFromAnnotation
	// is set and the hand-over is not done; the controller creates and
	// deletes no pod, and no progress deadline runs. The message says what
	// it waits for. Also the reason of the one Normal event when the wait
	// begins.
	ReasonWaitingForHandOver = "WaitingForHandOver"
	// ReasonHandOverAccessDenied: ReplicaFailure=True, the manager may not
	// read the Deployment or its ReplicaSets (get deployments, list
	// replicasets in apps); the message names what is missing. It waits,
	// reading again every 30 seconds.
	ReasonHandOverAccessDenied = "HandOverAccessDenied"
	// ReasonHandOverBlocked: ReplicaFailure=True, the hand-over cannot go
	// on without a change by a user: the Deployment named was never seen
	// and does not exist, or its selector is not the MyDeployment's. The
	// message says what to do.
	ReasonHandOverBlocked = "HandOverBlocked"
	// EventHandedOver: the hand-over is done and the annotations removed;
	// the message counts the pods taken over.
	EventHandedOver = "HandedOver"
)

// Canary analysis: a canary step goes on only while metric queries say
// the update revision is healthy (docs/beyond-deployment.md).
const (
	// AnalysisAnnotation (JSON, only beside CanaryStepsAnnotation) names a
	// Prometheus, one or more queries each with a threshold, an interval, a
	// count and a failure limit, e.g. {"prometheus":"http://prometheus:9090",
	// "interval":"30s","count":3,"failureLimit":1,"queries":[{"name":
	// "success-rate","query":"...{revision=\"{{revision}}\"}...","threshold":
	// ">= 0.99"}]}. At each size step and through each timed pause the step
	// ends only after count successful measurements of every query; more
	// than failureLimit failed measurements of a query abort the rollout
	// to the current revision (the abort path of OnFailureAbort). In a
	// query, {{revision}} is the update revision's RevisionLabel value,
	// {{namespace}} and {{name}} the MyDeployment's.
	AnalysisAnnotation = "apps.mydeployment.io/analysis"
	// ConditionAnalysis says how the canary analysis of the rollout's
	// current step stands (AnalysisAnnotation): True with
	// ReasonAnalysisPassed, Unknown with ReasonAnalysisRunning or
	// ReasonAnalysisInconclusive, False with ReasonAnalysisFailed. Its
	// message carries the last value of each query.
	ConditionAnalysis appsv1.DeploymentConditionType = "Analysis"
	// ReasonAnalysisRunning: Analysis=Unknown, the step is measured and
	// has not yet count successful measurements of every query.
	ReasonAnalysisRunning = "AnalysisRunning"
	// ReasonAnalysisPassed: Analysis=True, every query of the step met its
	// threshold count times: the step may end.
	ReasonAnalysisPassed = "AnalysisPassed"
	// ReasonAnalysisInconclusive: Analysis=Unknown, the last measurement
	// had no value (Prometheus unreachable, an error, no data or NaN): the
	// step holds, and goes on once values return. Never a promotion.
	ReasonAnalysisInconclusive = "AnalysisInconclusive"
	// ReasonAnalysisFailed: Analysis=False (and a Warning event of this
	// reason, once per abort), a query failed its threshold more than
	// failureLimit times: the rollout is aborted to the current revision
	// (Progressing=False, ReasonRolloutAborted). The message names the
	// query and its value.
	ReasonAnalysisFailed = "AnalysisFailed"
)

// The Leases of active-active shards (issue 56, internal/shard), in the
// manager's namespace: keys on the operator's own objects, not on a
// user's.
const (
	// ShardMemberLabel ("true") marks a manager replica's own Lease,
	// named mydeployment-shard-<its identity>.
	ShardMemberLabel = "apps.mydeployment.io/shard-member"
	// ShardHoldersAnnotation, on the Lease mydeployment-shards, lists which
	// replica holds which slots: "<identity>=<slots>,..." sorted by
	// identity, <slots> a 64-bit set in hex (0x and 16 digits).
	ShardHoldersAnnotation = "apps.mydeployment.io/shard-holders"
)
