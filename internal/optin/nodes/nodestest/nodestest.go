// Package nodestest is the node view as the tests of the modules that
// read it need it: a view whose manager may not list Nodes.
package nodestest

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/nodes"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
)

// Denied is module's part on a view that found objs (one at least opting
// into module) and was denied Nodes: a fake API server that answers every
// access review "no", the one failure it injects. It returns once the
// view asked; the view stops with the test.
func Denied(t *testing.T, module optin.Module, matters nodes.Change, objs ...client.Object) *nodes.Watch {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = appsv1beta1.AddToScheme(s)
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
				return nil // not allowed: Status.Allowed stays false
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	w := nodes.For(optin.BuildEnv{Reader: cl, Writer: cl, Pods: podwatch.NewIndex(), Log: logr.Discard()}, module, matters)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = w.Start(ctx) }()
	for start := time.Now(); !w.Seen().Denied; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the node view was not denied within 10s")
		}
	}
	return w
}
