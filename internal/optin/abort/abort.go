// Package abort is the abort-to-stable opt-in (OnFailureAnnotation Abort):
// a rollout that exceeds its progress deadline moves every pod back to the
// current revision, and `kubectl mydeployment rollout retry` starts it
// over (RetriedAtAnnotation, which also restarts a failed canary
// analysis). The verdict is the status package's (status.AbortDue) and the
// abort's record is the controller's (optin.Records.Aborted); this module
// owns the two annotations and tells the status both.
package abort

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Name is the module's name in an optin.Set.
const Name = "abort"

// Module is the abort module.
var Module optin.Module = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string {
	return []string{appsv1beta1.OnFailureAnnotation, appsv1beta1.RetriedAtAnnotation}
}

// Parse reads OnFailureAnnotation and RetriedAtAnnotation: nil when md
// has neither. Refused: an on-failure other than Continue or Abort, Abort
// with strategy Recreate (no stable pods are left to go back to), a
// retried-at that is not an RFC 3339 time.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	onFailure, hasOnFailure := md.Annotations[appsv1beta1.OnFailureAnnotation]
	retried, hasRetried := md.Annotations[appsv1beta1.RetriedAtAnnotation]
	if !hasOnFailure && !hasRetried {
		return nil, nil
	}
	var (
		a    Abort
		errs field.ErrorList
	)
	switch {
	case !hasOnFailure || onFailure == appsv1beta1.OnFailureContinue:
	case onFailure != appsv1beta1.OnFailureAbort:
		errs = append(errs, field.NotSupported(optin.Path(appsv1beta1.OnFailureAnnotation), onFailure,
			[]string{appsv1beta1.OnFailureContinue, appsv1beta1.OnFailureAbort}))
	case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		errs = append(errs, field.Forbidden(optin.Path(appsv1beta1.OnFailureAnnotation),
			"Abort needs spec.strategy.type RollingUpdate: Recreate has no stable pods left to go back to"))
	default:
		a.OnFailure = true
	}
	if hasRetried {
		t, err := time.Parse(time.RFC3339, retried)
		if err != nil {
			errs = append(errs, field.Invalid(optin.Path(appsv1beta1.RetriedAtAnnotation), retried,
				"must be an RFC 3339 time, as `kubectl mydeployment rollout retry` writes it"))
		}
		a.RetriedAt = t
	}
	return &a, errs
}

// Abort is the Spec of an object with either annotation.
type Abort struct {
	// OnFailure: on-failure Abort, the rollout goes back to the current
	// revision once it exceeds its progress deadline.
	OnFailure bool
	// RetriedAt is when `rollout retry` last started an aborted rollout
	// over; zero if never.
	RetriedAt time.Time
}

// Of is s's abort opt-in: the zero Abort (on-failure Continue, never
// retried) without one.
func Of(s optin.Set) Abort {
	if a, ok := optin.Get[*Abort](s, Name); ok {
		return *a
	}
	return Abort{}
}

// Module implements optin.Spec.
func (*Abort) Module() string { return Name }

// ReportInput implements status.Reporter: the status's verdict
// (status.AbortDue) reads both.
func (a *Abort) ReportInput(in *status.Input) {
	in.AbortOnFailure, in.RetriedAt = a.OnFailure, a.RetriedAt
}

// Retried implements optin.Retrier: when the rollout was last retried
// (the analysis measures a retried step afresh).
func (a *Abort) Retried() time.Time { return a.RetriedAt }

var (
	_ status.Reporter = (*Abort)(nil)
	_ optin.Retrier   = (*Abort)(nil)
)
