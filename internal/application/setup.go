package application

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Name is the controller's name: its event source.
const Name = "application-controller"

// CacheByObject are the cache settings this controller adds to the
// manager's: Services, Ingresses and EndpointSlices only when they carry
// ApplicationNameLabel (ours, and our Services' slices, which inherit the
// Service's labels), so the operator does not hold every Service and
// EndpointSlice of the cluster. MyDeployments are cached whole already.
func CacheByObject() map[client.Object]cache.ByObject {
	req, err := labels.NewRequirement(appsv1beta1.ApplicationNameLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key: cannot fail
	}
	ours := labels.NewSelector().Add(*req)
	return map[client.Object]cache.ByObject{
		&corev1.Service{}:            {Label: ours},
		&networkingv1.Ingress{}:      {Label: ours},
		&discoveryv1.EndpointSlice{}: {Label: ours},
	}
}

// AddToCache merges CacheByObject into opts (which another controller's
// settings built).
func AddToCache(opts *cache.Options) {
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	for obj, by := range CacheByObject() {
		opts.ByObject[obj] = by
	}
}

// Setup builds the reconciler and registers it with mgr, whose cache must
// include CacheByObject.
func Setup(mgr ctrl.Manager) (*Reconciler, error) {
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(Name)}
	return r, r.SetupWithManager(mgr)
}

// Installed reports whether the API server serves the Application kind, as
// mapper (the manager's, which asks discovery on a miss) finds it: false
// when the CRD is not installed (a cluster given only the MyDeployment CRD,
// or the manager run under a release that had only that one). Any other
// lookup error is returned.
func Installed(mapper meta.RESTMapper) (bool, error) {
	gvk := appsv1beta1.GroupVersion.WithKind("Application")
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("looking up %s: %w", gvk, err)
	}
}
