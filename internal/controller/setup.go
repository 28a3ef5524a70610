package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/freshness"
	"github.com/mydeployment-io/mydeployment-operator/internal/managercache"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// MyDeploymentControllerName is the MyDeployment controller's name: its
// event source and log name.
const MyDeploymentControllerName = "mydeployment-controller"

// MyDeploymentCache is what the MyDeployment controller needs of the
// manager's cache: MyDeployments and ControllerRevisions whole, and pods
// only if they carry both revision labels (ours, or orphans we could
// adopt), trimmed to the fields the controller reads (podwatch.Trim). Pod
// informers carry pods' index by controller, read without copies through
// pods, which SetupMyDeployment must then be given.
func MyDeploymentCache(pods *podwatch.Index) managercache.Needs {
	return managercache.Needs{
		Controller: MyDeploymentControllerName,
		Objects: map[client.Object]cache.ByObject{
			&appsv1beta1.MyDeployment{}:  {},
			&appsv1.ControllerRevision{}: {},
			&corev1.Pod{}:                {Label: podwatch.Cached, Transform: podwatch.Trim},
		},
		NewInformer: pods.NewInformer,
	}
}

// MyDeploymentOptions are the MyDeployment controller's knobs that
// cmd/main.go exposes as flags.
type MyDeploymentOptions struct {
	// Workers is how many MyDeployments are reconciled in parallel.
	Workers int
	// StatusBatchPeriod is the least time between two status writes of one
	// MyDeployment that only count a rollout's pods (see memory.paceStatus); 0
	// writes every change at once.
	StatusBatchPeriod time.Duration
	// Pods is the index the manager's cache was built with (MyDeploymentCache).
	Pods *podwatch.Index
	// InPlaceTimeout is how long an in-place update may take before the
	// pod is replaced; 0 means DefaultInPlaceTimeout.
	InPlaceTimeout time.Duration
}

// DefaultStatusBatchPeriod is the manager's --status-batch-period default.
const DefaultStatusBatchPeriod = time.Second

// SetupMyDeployment builds the MyDeployment reconciler with its real
// collaborators and registers it with mgr, whose cache must have been
// composed with MyDeploymentCache(opts.Pods). It fails if the revision
// index, a module's part or the controller cannot be registered.
func SetupMyDeployment(ctx context.Context, mgr ctrl.Manager, opts MyDeploymentOptions) (*MyDeploymentReconciler, error) {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &appsv1.ControllerRevision{}, revision.OwnerIndex,
		revision.OwnerIndexValues); err != nil {
		return nil, fmt.Errorf("indexing revisions by owner: %w", err)
	}
	recorder := mgr.GetEventRecorder(MyDeploymentControllerName)
	r := &MyDeploymentReconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		PodIndex:          opts.Pods,
		Recorder:          recorder,
		Pods:              metrics.InstrumentPods(&podcontrol.Real{Client: mgr.GetClient(), Recorder: recorder}),
		Revisions:         &revision.Store{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ByOwner: true},
		Metrics:           metrics.NewRecorder(),
		Clock:             clock.RealClock{},
		Workers:           opts.Workers,
		StatusBatchPeriod: opts.StatusBatchPeriod,
		InPlaceTimeout:    opts.InPlaceTimeout,
		objects:           newObjects(freshness.DefaultTimeout),
		parts:             map[string]optin.Part{},
	}
	env := optin.BuildEnv{Reader: mgr.GetClient(), Indexer: mgr.GetFieldIndexer(), Writer: mgr.GetClient(), Pods: opts.Pods,
		Config: mgr.GetConfig(), Log: mgr.GetLogger()}
	for _, m := range modules.Builders {
		p, err := m.Build(ctx, env)
		if err != nil {
			return nil, fmt.Errorf("the %s module: %w", m.Name(), err)
		}
		if run, ok := p.(manager.Runnable); ok {
			if err := mgr.Add(run); err != nil {
				return nil, fmt.Errorf("adding the %s module's watch: %w", m.Name(), err)
			}
		}
		r.parts[m.Name()] = p
	}
	return r, r.SetupWithManager(ctx, mgr)
}
