/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package olm

import (
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// The operator's Deployment that OLM creates runs on a kwok node: the suite
// runs the manager on the host as that pod (utils.OLMOperator says how).

const (
	operatorNamespace  = "md-system"
	operatorDeployment = "mydeployment-operator-controller-manager"
	// operatorServiceAccount is the one the CSV's permissions are for.
	operatorServiceAccount = "mydeployment-operator-controller-manager"
)

var operator = &utils.OLMOperator{Namespace: operatorNamespace, Deployment: operatorDeployment,
	ServiceAccount: operatorServiceAccount}

// startManager (re)starts the host manager as the operator pod OLM runs now.
func startManager() {
	operator.WorkDir = workDir
	// OPERATOR_NAMESPACE: in a pod operator-lib reads the namespace of the
	// OperatorCondition from the service account's files, which a host
	// process has not.
	operator.StartManager(projectDir, "OPERATOR_NAMESPACE="+operatorNamespace)
}

func serviceAccountUser(ns, name string) string { return utils.ServiceAccountUser(ns, name) }

// canI is `kubectl auth can-i VERB RESOURCE -n NS --as USER`: "yes" or "no"
// (anything else is returned whole, for the failure message).
func canI(user, ns, verb, resource string) func() string {
	return func() string {
		out, _ := utils.Kubectl("auth", "can-i", verb, resource, "-n", ns, "--as", user)
		if lines := utils.GetNonEmptyLines(out); len(lines) > 0 {
			if last := strings.TrimSpace(lines[len(lines)-1]); last == "yes" || last == "no" {
				return last
			}
		}
		return out
	}
}

func stopManager() { operator.StopManager() }

// operatorQuiet is how long OLM must leave the operator's Deployment and CSV
// as they are before the suite takes over the pod.
const operatorQuiet = 20 * time.Second

// waitOperatorSettled waits until CSV v is Succeeded and OLM has left it and
// the operator's Deployment alone for operatorQuiet. Right after an upgrade
// OLM may install the CSV once more (reason NeedsCertRotation: the webhook
// certificate's Secret went with the old CSV), rolling the operator's pod
// again within seconds; the manager must stand for the pod that stays.
func waitOperatorSettled(v string) {
	GinkgoHelper()
	By("waiting until OLM leaves the upgraded operator alone (it may refresh the webhook certificate once more)")
	// state is "generation=observed updated=available=replicas phase" when
	// rolled out: the Deployment's, the CSV's phase.
	state := func() string {
		return utils.JSONPath("{.metadata.generation}={.status.observedGeneration} {.status.updatedReplicas}={.status.availableReplicas}={.status.replicas}",
			"-n", operatorNamespace, "deployment", operatorDeployment)() + " " +
			utils.JSONPath("{.status.phase}", "-n", operatorNamespace, "csv", "mydeployment-operator.v"+v)()
	}
	rolledOut := regexp.MustCompile(`^(\d+)=(\d+) (\d+)=(\d+)=(\d+) Succeeded$`)
	last, since := "", time.Now()
	Eventually(func() string {
		if now := state(); now != last {
			last, since = now, time.Now()
		}
		m := rolledOut.FindStringSubmatch(last)
		switch {
		case m == nil || m[1] != m[2] || m[3] != m[4] || m[4] != m[5]:
			return "not rolled out: " + last
		case time.Since(since) < operatorQuiet:
			return "quiet for less than " + operatorQuiet.String() + ": " + last
		}
		return "settled"
	}, 3*time.Minute, time.Second).Should(Equal("settled"))
}

func removeAddresses() { operator.RemoveAddresses() }
