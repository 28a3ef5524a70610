package application

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// staleApps is a client whose reads of one Application return an older
// copy of it, as a cache behind our own last status write would.
type staleApps struct {
	client.Client
	old *appsv1beta1.Application
}

func (c staleApps) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if app, ok := obj.(*appsv1beta1.Application); ok && key == client.ObjectKeyFromObject(c.old) {
		c.old.DeepCopyInto(app)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

var _ = Describe("Application status writes", func() {
	It("never writes a status computed from an older copy of the Application: the write is refused and the sync comes again", func() {
		ns := newNamespace()
		app := minimal(ns, "stale")
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		old := app.DeepCopy() // as created: no status yet
		Eventually(func() int64 { return getApp(app).Status.ObservedGeneration }, timeout, interval).Should(Equal(app.Generation))

		r := &Reconciler{Client: staleApps{Client: k8sClient, old: old}, APIReader: k8sClient,
			Recorder: events.NewFakeRecorder(100)}
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key(app)})
		Expect(err).NotTo(HaveOccurred())
		// The manager's own syncs write this Application too, so its
		// resourceVersion says nothing; the conflict is what shows the
		// stale write was refused (a plain merge patch goes through).
		Expect(res.RequeueAfter).To(Equal(requeueConflict), "the status write met a newer Application")
	})
})
