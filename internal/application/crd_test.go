package application

import (
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// The CRD as a user meets it, through kubectl against the real API server.
var _ = Describe("Application CRD", func() {
	var kubeconfig string
	BeforeEach(func() {
		user, err := testEnv.AddUser(envtest.User{Name: "crd-reader", Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		raw, err := user.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(os.WriteFile(kubeconfig, raw, 0o600)).To(Succeed())
	})
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join("..", "..", "bin", "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}

	It("installs with client-side kubectl apply (its last-applied annotation fits in 256 KiB)", func() {
		out, err := kubectl("apply", "-f", filepath.Join("..", "..", "config", "crd", "bases", "apps.mydeployment.io_applications.yaml"))
		Expect(err).NotTo(HaveOccurred(), out)
	})

	It("explains spec.service and spec.ingress completely", func() {
		Eventually(func() (string, error) { return kubectl("explain", "mdapp.spec.service.ports.targetPort") }, timeout, interval).
			Should(ContainSubstring("Number or name of the port to access on the pods targeted by the service"))
		out, err := kubectl("explain", "mdapp.spec.ingress.rules.http.paths.backend.service")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("is the referenced service"))
		out, err = kubectl("explain", "mdapp.spec.service")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("Service, when given, is the spec of a Service named after the"))
		Expect(out).To(ContainSubstring("sessionAffinity"))
	})

	It("lists Applications with READY, AVAILABLE, URL and AGE as mdapp, and in kubectl get all", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, minimal(ns, "listed"))).To(Succeed())
		Eventually(func() (string, error) { return kubectl("get", "mdapp", "-n", ns) }, timeout, interval).
			Should(MatchRegexp(`NAME\s+READY\s+AVAILABLE\s+URL\s+AGE\nlisted\s+False\s+`))
		out, err := kubectl("get", "app", "-n", ns)
		Expect(err).To(HaveOccurred(), "app is Argo CD's short name (and KubeVela's), not ours: %s", out)
		Expect(out).To(ContainSubstring(`the server doesn't have a resource type "app"`))
		Eventually(func() (string, error) { return kubectl("describe", "mdapp", "listed", "-n", ns) }, timeout, interval).
			Should(MatchRegexp(`Children:\n\s+My Deployment:\s+\d/1 pods available, \d up to date\n\s+Service:\s+ClusterIP [0-9.]+, 0 ready endpoints\n`),
				"one line per child in kubectl describe")
		out, err = kubectl("get", "all", "-n", ns)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("application.apps.mydeployment.io/listed"))
	})

	It("runs the sample (config/samples): a MyDeployment and a Service on the container's port", func() {
		ns := newNamespace()
		out, err := kubectl("apply", "-n", ns, "-f", filepath.Join("..", "..", "config", "samples", "apps_v1beta1_application.yaml"))
		Expect(err).NotTo(HaveOccurred(), out)
		sample := &appsv1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "application-sample"}}
		childOf(sample, &appsv1beta1.MyDeployment{})
		svc := childOf(sample, &corev1.Service{})
		Expect(svc.Spec.Ports).To(HaveLen(1))
		Expect(svc.Spec.Ports[0].Port).To(Equal(int32(80)))
		Expect(svc.Spec.Ports[0].TargetPort).To(Equal(intstr.FromString("http")))
	})
})
