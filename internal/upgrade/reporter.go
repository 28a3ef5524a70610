package upgrade

import (
	"context"
	"fmt"
	"time"

	"github.com/operator-framework/operator-lib/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
)

// Defaults of a Reporter's timings.
const (
	// DefaultBatch gathers MyDeployment events for one evaluation.
	DefaultBatch = time.Second
	// DefaultRecheck: while not upgradeable, look again this often (pod
	// writes get observed without any MyDeployment event).
	DefaultRecheck = 5 * time.Second
	// DefaultRetryAbsent: how often to look for a missing OperatorCondition.
	DefaultRetryAbsent = time.Minute
)

// key is the one work item: every event leads to one evaluation of all.
var key = reconcile.Request{NamespacedName: types.NamespacedName{Name: "upgradeable"}}

// Reporter keeps the Upgradeable condition up to date. It runs as a
// controller of its own (leader only) whose single work item is enqueued by
// every MyDeployment event, batched.
type Reporter struct {
	// Reader lists the watched MyDeployments (the manager's cache).
	Reader client.Reader
	// Condition is the operator's Upgradeable condition.
	Condition conditions.Condition
	// Unobserved counts MyDeployments with pod writes not yet in the cache.
	Unobserved func() int
	// Batch, Recheck and RetryAbsent default to the Default* values.
	Batch, Recheck, RetryAbsent time.Duration

	reported     *Verdict // last written; nil: none yet
	absentLogged bool
}

// Setup registers a Reporter on mgr when the operator runs under OLM v0, its
// condition from [NewCondition]; otherwise (OLM v1, which has no
// OperatorCondition, or no OLM) it logs once that upgrade gating is off and
// why, sets mydeployment_upgrade_gating_enabled to 0, and registers nothing.
// unobserved is as in Reporter.
func Setup(mgr ctrl.Manager, unobserved func() int) error {
	log := mgr.GetLogger().WithName("upgradeable")
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: Scheme, Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
	if err != nil {
		return fmt.Errorf("client for OperatorConditions: %w", err)
	}
	cond, err := NewCondition(c)
	if err != nil {
		metrics.SetUpgradeGating(false)
		log.Info("upgrade gating is off: not reporting Upgradeable to OLM, so operator upgrades are not held while rollouts run", "reason", err.Error())
		return nil
	}
	return (&Reporter{Reader: mgr.GetClient(), Condition: cond, Unobserved: unobserved}).SetupWithManager(mgr)
}

// queue is the controller's work queue.
type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// SetupWithManager registers r as the "upgradeable" controller.
func (r *Reporter) SetupWithManager(mgr ctrl.Manager) error {
	batch := orDefault(r.Batch, DefaultBatch)
	enqueue := func(q queue) { q.AddAfter(key, batch) }
	return ctrl.NewControllerManagedBy(mgr).
		Named("upgradeable").
		Watches(&appsv1beta1.MyDeployment{}, handler.Funcs{
			CreateFunc:  func(_ context.Context, _ event.CreateEvent, q queue) { enqueue(q) },
			UpdateFunc:  func(_ context.Context, _ event.UpdateEvent, q queue) { enqueue(q) },
			DeleteFunc:  func(_ context.Context, _ event.DeleteEvent, q queue) { enqueue(q) },
			GenericFunc: func(_ context.Context, _ event.GenericEvent, q queue) { enqueue(q) },
		}).
		// Once at start, so a settled operator with no MyDeployment event says so.
		WatchesRawSource(source.Func(func(_ context.Context, q queue) error {
			q.Add(key)
			return nil
		})).
		Complete(r)
}

// Reconcile evaluates every watched MyDeployment and writes the verdict when
// it changed. A missing OperatorCondition (or CRD) is logged once and looked
// for again later, without an error.
func (r *Reporter) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	var list appsv1beta1.MyDeploymentList
	if err := r.Reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing MyDeployments: %w", err)
	}
	unobserved := 0
	if r.Unobserved != nil {
		unobserved = r.Unobserved()
	}
	v := Evaluate(list.Items, unobserved)
	var next reconcile.Result
	if !v.Upgradeable {
		next.RequeueAfter = orDefault(r.Recheck, DefaultRecheck)
	}
	if r.reported != nil && *r.reported == v {
		return next, nil
	}
	st := metav1.ConditionTrue
	if !v.Upgradeable {
		st = metav1.ConditionFalse
	}
	err := r.Condition.Set(ctx, st, conditions.WithReason(v.Reason), conditions.WithMessage(v.Message))
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		metrics.SetUpgradeGating(false)
		if !r.absentLogged {
			log.Info("no OperatorCondition to report Upgradeable on; looking again later", "error", err.Error())
			r.absentLogged = true
		}
		return reconcile.Result{RequeueAfter: orDefault(r.RetryAbsent, DefaultRetryAbsent)}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("setting Upgradeable=%s: %w", st, err)
	}
	metrics.SetUpgradeGating(true)
	log.Info("reported to OLM", "upgradeable", v.Upgradeable, "reason", v.Reason, "message", v.Message)
	r.reported, r.absentLogged = &v, false
	return next, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
