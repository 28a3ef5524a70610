package controller

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// What a user types: kubectl apply of a manifest, edited and applied again.
// A Deployment (client-side apply) is the reference. Server-side apply of
// {type: Recreate} over a Deployment's defaulted rollingUpdate block is
// refused by kube-apiserver 1.37 ("spec.strategy.rollingUpdate: Forbidden"):
// a MyDeployment, which stores no such block, takes it.
var _ = Describe("kubectl apply of a strategy change", func() {
	var kubectl func(stdin string, args ...string) error
	BeforeEach(func() {
		user, err := testEnv.AddUser(envtest.User{Name: "kubectl-apply", Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		kubeconfig, err := user.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
		assets := os.Getenv("KUBEBUILDER_ASSETS")
		if assets == "" {
			assets = testEnv.BinaryAssetsDirectory
		}
		kubectl = func(stdin string, args ...string) error {
			cmd := exec.Command(filepath.Join(assets, "kubectl"), append([]string{"--kubeconfig", path}, args...)...)
			cmd.Stdin = bytes.NewBufferString(stdin)
			out, err := cmd.CombinedOutput()
			GinkgoWriter.Printf("kubectl %v:\n%s", args, out)
			if err != nil {
				return fmt.Errorf("kubectl %v: %w: %s", args, err, out)
			}
			return nil
		}
	})

	for _, kind := range []string{"Deployment", "MyDeployment"} {
		for _, mode := range []string{"client-side", "server-side"} {
			if kind == "Deployment" && mode == "server-side" {
				continue
			}
			It(fmt.Sprintf("switches a %s to Recreate and back (%s apply)", kind, mode), func() {
				ns := newNamespace()
				apiVersion := "apps/v1"
				if kind == "MyDeployment" {
					apiVersion = appsv1beta1.GroupVersion.String()
				}
				apply := func(strategy string) error {
					manifest := fmt.Sprintf(`apiVersion: %s
kind: %s
metadata: {name: web, namespace: %s}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
%s`, apiVersion, kind, ns, strategy)
					args := []string{"apply", "-f", "-"}
					if mode == "server-side" {
						args = append(args, "--server-side")
					}
					return kubectl(manifest, args...)
				}
				key := client.ObjectKey{Namespace: ns, Name: "web"}
				stored := func() appsv1.DeploymentStrategy {
					if kind == "Deployment" {
						d := &appsv1.Deployment{}
						Expect(k8sClient.Get(ctx, key, d)).To(Succeed())
						return d.Spec.Strategy
					}
					md := &appsv1beta1.MyDeployment{}
					Expect(k8sClient.Get(ctx, key, md)).To(Succeed())
					return md.Spec.Strategy
				}

				By("applied without a strategy")
				Expect(apply("")).To(Succeed())
				Expect(stored().Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
				if kind == "MyDeployment" {
					Expect(stored().RollingUpdate).To(BeNil(), "no rollingUpdate block is stored by default")
				}

				By("strategy {type: Recreate}")
				Expect(apply("  strategy: {type: Recreate}\n")).To(Succeed())
				Expect(stored()).To(Equal(appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}))

				By("back to RollingUpdate with only maxSurge: maxUnavailable defaults to 25%")
				Expect(apply("  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1}}\n")).To(Succeed())
				ru := stored().RollingUpdate
				Expect(ru).NotTo(BeNil())
				Expect(ru.MaxSurge).To(HaveValue(Equal(intstr.FromInt32(1))))
				Expect(ru.MaxUnavailable).To(HaveValue(Equal(intstr.FromString("25%"))))

				By("Recreate again: the rollingUpdate block the manifest dropped goes")
				Expect(apply("  strategy: {type: Recreate}\n")).To(Succeed())
				Expect(stored()).To(Equal(appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}))
			})
		}
	}
})
