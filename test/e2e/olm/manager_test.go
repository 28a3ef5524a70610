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
	"strings"

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

func removeAddresses() { operator.RemoveAddresses() }
