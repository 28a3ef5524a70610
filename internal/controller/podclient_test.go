package controller

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
)

// The manager creates and deletes pods through client-go (podcontrol.NewClient);
// what the controller relies on must hold as through controller-runtime.
var _ = Describe("the manager's client for pod writes", func() {
	It("creates a pod with a generated name into the object given, and deletes it by UID precondition", func() {
		ns := newNamespace()
		c, err := podcontrol.NewClient(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "light-", Labels: map[string]string{"app": "light"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
		}
		Expect(c.Create(ctx, pod)).To(Succeed())
		Expect(pod.Name).To(HavePrefix("light-"))
		Expect(pod.UID).NotTo(BeEmpty())
		Expect(pod.ResourceVersion).NotTo(BeEmpty())

		other := types.UID("not-" + string(pod.UID))
		err = c.Delete(ctx, pod, client.Preconditions{UID: &other})
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "a UID precondition that does not hold: %v", err)
		Expect(c.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}, client.GracePeriodSeconds(0))).To(Succeed())
		Expect(apierrors.IsNotFound(c.Delete(ctx, pod))).To(BeTrue(), "deleting it again is NotFound")

		// Anything else goes through controller-runtime's client.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
		Expect(c.Create(ctx, cm)).To(Succeed())
		Expect(c.Delete(ctx, cm, &client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
	})
})
