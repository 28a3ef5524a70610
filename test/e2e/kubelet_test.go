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

package e2e

import "github.com/mydeployment-io/mydeployment-operator/test/e2e/kubeletclaims"

// What the local cluster's kwok stages (hack/kwok/stages.yaml) show of a
// kubelet, on plain pods with no controller, driven with kubectl: the in-place
// update of MyDeployment (readiness gate, image patch, pods/resize) relies on
// exactly this. The real-node suite (test/e2e/real) runs the same specs on a
// real kubelet. Nothing runs on kwok's nodes, so any image name will do.
var _ = kubeletclaims.Claims("the local cluster's kubelet simulation", "e2e-kubelet", kubeletclaims.Images{
	Web: "nginx:1.27", WebNext: "nginx:1.28",
	Sidecar: "envoy:1.33", SidecarNext: "envoy:1.34",
	Log: "fluentbit:4.0",
})
