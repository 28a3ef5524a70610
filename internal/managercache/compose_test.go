package managercache_test

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/application"
	"github.com/mydeployment-io/mydeployment-operator/internal/controller"
	"github.com/mydeployment-io/mydeployment-operator/internal/managercache"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
)

// byType finds the settings of obj's type in opts, and whether it is there.
func byType(opts cache.Options, obj client.Object) (cache.ByObject, bool) {
	for o, by := range opts.ByObject {
		if reflect.TypeOf(o) == reflect.TypeOf(obj) {
			return by, true
		}
	}
	return cache.ByObject{}, false
}

// The manager's cache as cmd/main.go composes it gives each kind's
// controller exactly the view it asked for: the MyDeployment controller's
// pods are labelled and trimmed, the Application controller's Services,
// Ingresses and EndpointSlices are labelled and whole, and the custom
// kinds are left to the cache's default: unfiltered, and no REST mapping
// needed at start (the Application CRD may come later).
func TestComposeGivesEachControllerItsOwnView(t *testing.T) {
	opts, err := managercache.Compose([]string{"a", "b"},
		controller.MyDeploymentCache(podwatch.NewIndex()), application.Cache())
	if err != nil {
		t.Fatalf("Compose: %v", err)
	}
	if opts.DefaultTransform == nil || opts.NewInformer == nil {
		t.Errorf("want managedFields stripped and the pod index's informers, got DefaultTransform %v, NewInformer %v",
			opts.DefaultTransform != nil, opts.NewInformer != nil)
	}
	if len(opts.DefaultNamespaces) != 2 {
		t.Errorf("want namespaces a and b, got %v", opts.DefaultNamespaces)
	}

	revisioned := labels.Set{appsv1beta1.RevisionLabel: "1", appsv1beta1.PodTemplateHashLabel: "abc"}
	pod, ok := byType(opts, &corev1.Pod{})
	switch {
	case !ok:
		t.Fatal("no pod settings: the MyDeployment controller's pods would be every pod, whole")
	case pod.Label == nil || !pod.Label.Matches(revisioned) || pod.Label.Matches(labels.Set{"app": "web"}):
		t.Errorf("pods: want only those with both revision labels, got selector %v", pod.Label)
	case pod.Transform == nil:
		t.Error("pods: want trimmed, got no transform")
	default:
		out, err := pod.Transform(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}})
		if err != nil || len(out.(*corev1.Pod).Spec.Containers) != 0 {
			t.Errorf("pods: want the containers trimmed away, got %v, %v", out, err)
		}
	}

	ours := labels.Set{appsv1beta1.ApplicationNameLabel: "web"}
	for _, obj := range []client.Object{&corev1.Service{}, &networkingv1.Ingress{}, &discoveryv1.EndpointSlice{}} {
		by, ok := byType(opts, obj)
		switch {
		case !ok:
			t.Errorf("%T: no settings", obj)
		case by.Label == nil || !by.Label.Matches(ours) || by.Label.Matches(revisioned):
			t.Errorf("%T: want only the Application's, got selector %v", obj, by.Label)
		case by.Transform != nil:
			t.Errorf("%T: want whole (managedFields aside), got a transform", obj)
		}
	}
	for _, obj := range []client.Object{&appsv1beta1.MyDeployment{}, &appsv1beta1.Application{}} {
		if by, ok := byType(opts, obj); ok {
			t.Errorf("%T: want the cache's default (every object, whole), got %+v", obj, by)
		}
	}
}

// A controller that reads a type another one filters or trims would read
// that view without knowing: Compose refuses it, both ways round, and
// accepts two controllers reading the same type whole.
func TestComposeRefusesAViewAnotherControllerWouldSee(t *testing.T) {
	pods := podwatch.NewIndex()
	for _, tc := range []struct {
		name    string
		needs   []managercache.Needs
		wantErr string
	}{
		{"another controller reads pods, which MyDeployment's trims",
			[]managercache.Needs{controller.MyDeploymentCache(pods),
				{Controller: "pod-reader", Objects: map[client.Object]cache.ByObject{&corev1.Pod{}: {}}}},
			"v1.Pod: listed by the mydeployment-controller and pod-reader controllers"},
		{"another controller reads Services, which Application's filters",
			[]managercache.Needs{application.Cache(),
				{Controller: "service-reader", Objects: map[client.Object]cache.ByObject{&corev1.Service{}: {}}}},
			"v1.Service: listed by the application-controller and service-reader controllers"},
		{"a later controller filters MyDeployments, which both read whole",
			[]managercache.Needs{controller.MyDeploymentCache(pods), application.Cache(),
				{Controller: "picky", Objects: map[client.Object]cache.ByObject{
					&appsv1beta1.MyDeployment{}: {Label: labels.SelectorFromSet(labels.Set{"a": "b"})}}}},
			"v1beta1.MyDeployment: listed by the mydeployment-controller and picky controllers"},
		{"two controllers build the informers",
			[]managercache.Needs{controller.MyDeploymentCache(pods), {Controller: "other", NewInformer: toolscache.NewSharedIndexInformer}},
			"the mydeployment-controller and other controllers both set the cache's NewInformer"},
		{"both read MyDeployments whole", []managercache.Needs{controller.MyDeploymentCache(pods), application.Cache()}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := managercache.Compose(nil, tc.needs...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("want no error, got %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("want an error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}
