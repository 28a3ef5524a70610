package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/expectations"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// Name is the controller's name: its event source and log name.
const Name = "mydeployment-controller"

// CacheOptions are the manager's cache settings for this controller: pods
// only if they carry both revision labels (ours, or orphans we could adopt)
// and trimmed to the fields the controller reads (trimPod), no managedFields
// on anything cached, and only the given namespaces (all when empty), as
// OLM's target namespaces say. Pod informers carry pods' index by
// controller, read without copies through pods.
func CacheOptions(namespaces []string, pods *PodIndex) cache.Options {
	ours := labels.NewSelector()
	for _, key := range []string{appsv1beta1.RevisionLabel, appsv1beta1.PodTemplateHashLabel} {
		req, err := labels.NewRequirement(key, selection.Exists, nil)
		if err != nil {
			panic(err) // constant keys: cannot fail
		}
		ours = ours.Add(*req)
	}
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		NewInformer:      pods.newInformer,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: ours, Transform: trimPod},
		},
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// Options are the controller's knobs that cmd/main.go exposes as flags.
type Options struct {
	// Workers is how many MyDeployments are reconciled in parallel.
	Workers int
	// StatusBatchPeriod is the least time between two status writes of one
	// MyDeployment that only count a rollout's pods (see statusPacer); 0
	// writes every change at once.
	StatusBatchPeriod time.Duration
	// Pods is the index the manager's cache was built with (CacheOptions).
	Pods *PodIndex
}

// DefaultStatusBatchPeriod is the manager's --status-batch-period default.
const DefaultStatusBatchPeriod = time.Second

// Setup builds the reconciler with its real collaborators and registers it
// with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) (*MyDeploymentReconciler, error) {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &appsv1.ControllerRevision{}, revision.OwnerIndex,
		revision.OwnerIndexValues); err != nil {
		return nil, fmt.Errorf("indexing revisions by owner: %w", err)
	}
	recorder := mgr.GetEventRecorder(Name)
	r := &MyDeploymentReconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		PodIndex:      opts.Pods,
		Recorder:      recorder,
		Pods:          metrics.InstrumentPods(&podcontrol.Real{Client: mgr.GetClient(), Recorder: recorder}),
		Revisions:     &revision.Store{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ByOwner: true},
		RevisionData:  &revision.PatchCache{},
		Expectations:  expectations.New(expectations.DefaultTimeout),
		Metrics:       metrics.NewRecorder(),
		Clock:         clock.RealClock{},
		Workers:       opts.Workers,
		StatusPacer:   newStatusPacer(opts.StatusBatchPeriod),
		WrittenStatus: newStatusMemory(),
	}
	return r, r.SetupWithManager(ctx, mgr)
}
