package application

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// writeLog is a client that notes every write asked of it, then makes it.
type writeLog struct {
	client.Client
	mu     *sync.Mutex
	writes *[]string
}

func newWriteLog(c client.Client) writeLog {
	return writeLog{Client: c, mu: &sync.Mutex{}, writes: &[]string{}}
}

func (w writeLog) note(verb string, obj any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name := ""
	if o, ok := obj.(client.Object); ok {
		name = o.GetName()
	}
	*w.writes = append(*w.writes, fmt.Sprintf("%s %T %s", verb, obj, name))
}

// noted are the writes asked so far.
func (w writeLog) noted() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string{}, *w.writes...)
}

func (w writeLog) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	w.note("create", obj)
	return w.Client.Create(ctx, obj, opts...)
}

func (w writeLog) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	w.note("update", obj)
	return w.Client.Update(ctx, obj, opts...)
}

func (w writeLog) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	w.note("patch", obj)
	return w.Client.Patch(ctx, obj, patch, opts...)
}

func (w writeLog) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	w.note("apply", obj)
	return w.Client.Apply(ctx, obj, opts...)
}

func (w writeLog) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	w.note("delete", obj)
	return w.Client.Delete(ctx, obj, opts...)
}

func (w writeLog) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	w.note("delete all of", obj)
	return w.Client.DeleteAllOf(ctx, obj, opts...)
}

func (w writeLog) Status() client.SubResourceWriter { return w.SubResource("status") }

func (w writeLog) SubResource(name string) client.SubResourceClient {
	return subResourceLog{SubResourceClient: w.Client.SubResource(name), log: w, name: name}
}

// subResourceLog notes the writes to a subresource in its writeLog.
type subResourceLog struct {
	client.SubResourceClient
	log  writeLog
	name string
}

func (s subResourceLog) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	s.log.note("create "+s.name, obj)
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (s subResourceLog) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.log.note("update "+s.name, obj)
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s subResourceLog) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.log.note("patch "+s.name, obj)
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (s subResourceLog) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	s.log.note("apply "+s.name, obj)
	return s.SubResourceClient.Apply(ctx, obj, opts...)
}

// writesOfASync are the writes one sync of app asks for, made by a
// Reconciler of its own (the manager's goes on beside it) that reads
// around the cache.
func writesOfASync(app *appsv1beta1.Application, routes bool) []string {
	GinkgoHelper()
	log := newWriteLog(k8sClient)
	r := &Reconciler{Client: log, APIReader: k8sClient, Recorder: events.NewFakeRecorder(100)}
	r.routesServed.Store(routes)
	_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key(app)})
	Expect(err).NotTo(HaveOccurred())
	return log.noted()
}

var _ = Describe("An Application at rest", func() {
	It("is synced without a write: each child, as the API server holds it, already is what the spec asks", func() {
		ns := newNamespace()
		app := minimal(ns, "quiet")
		app.Spec.Deployment.Metadata = &appsv1beta1.ChildMetadata{Labels: map[string]string{"team": "shop"},
			Annotations: map[string]string{"example.com/owner": "team-a"}}
		app.Spec.Ingress = &appsv1beta1.ApplicationIngressSpec{IngressSpec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: "quiet.example.com"}}}}
		app.Spec.Autoscaling = &appsv1beta1.ApplicationAutoscaling{MinReplicas: ptr.To(int32(2)), MaxReplicas: 5,
			TargetCPUUtilizationPercentage: ptr.To(int32(60))}
		app.Spec.DisruptionBudget = &appsv1beta1.ApplicationDisruptionBudget{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(func() int64 { return getApp(app).Status.ObservedGeneration }, timeout, interval).Should(Equal(app.Generation))

		Eventually(func() []string { return writesOfASync(app, false) }, timeout, interval).Should(BeEmpty())
		Consistently(func() []string { return writesOfASync(app, false) }, "1s", 200*time.Millisecond).Should(BeEmpty())

		By("a generation not yet written: every child applied, though each already looks as asked")
		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Deployment.Metadata.Labels = nil })
		Eventually(func() map[string]string { return childOf(app, &appsv1beta1.MyDeployment{}).Labels }, timeout, interval).
			Should(Equal(map[string]string{appsv1beta1.ApplicationNameLabel: "quiet"}), "the label the spec dropped is removed")
	})
})
