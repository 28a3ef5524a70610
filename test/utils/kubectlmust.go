package utils

import (
	"path/filepath"
	"time"

	. "github.com/onsi/gomega" //nolint:revive,staticcheck
)

// MustKubectl runs kubectl and fails the spec (at the caller) if it fails.
func MustKubectl(args ...string) string {
	out, err := Kubectl(args...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	return out
}

// JSONPath returns a poll function for Eventually: `kubectl get args -o
// jsonpath=path`, "" while it fails.
func JSONPath(path string, args ...string) func() string {
	return func() string {
		out, _ := Kubectl(append(append([]string{"get"}, args...), "-o", "jsonpath="+path)...)
		return out
	}
}

// MustApply applies yaml and fails the spec (at the caller) if it fails.
func MustApply(yaml string) {
	out, err := KubectlStdin(yaml, "apply", "-f", "-")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
}

// InvalidMyDeployment is a MyDeployment whose pod template the API server
// would refuse (a negative cpu request): the webhook must refuse it at
// admission. Format it with the namespace.
const InvalidMyDeployment = `apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata: {name: negative-cpu, namespace: %s}
spec:
  selector: {matchLabels: {app: bad}}
  template:
    metadata: {labels: {app: bad}}
    spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: "-1"}}}]}
`

// MustInstallCRDs applies the CRDs of config/crd/bases server-side and
// waits until each is Established (polled: kubectl wait fails outright
// while a new CRD has no conditions yet); it fails the spec if either
// does not happen.
func MustInstallCRDs(projectDir string) {
	MustKubectl("apply", "--server-side", "-f", filepath.Join(projectDir, "config", "crd", "bases"))
	for _, crd := range []string{"mydeployments", "applications"} {
		EventuallyWithOffset(1, JSONPath(`{.status.conditions[?(@.type=="Established")].status}`,
			"crd", crd+".apps.mydeployment.io"), time.Minute, 200*time.Millisecond).Should(Equal("True"), crd)
	}
}
