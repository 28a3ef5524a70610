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

package real

import "github.com/mydeployment-io/mydeployment-operator/test/e2e/kubeletclaims"

// The specs test/e2e runs on kwok's nodes, whose stages
// (hack/kwok/stages.yaml) play the kubelet, here on real-0's kubelet: what
// the stages claim is what a kubelet does. The test web app serves each
// container on a port of its own (a pod's containers share its network).
var _ = kubeletclaims.Claims("what kwok's stages claim of a kubelet, on real-0's kubelet", "real-kubelet", kubeletclaims.Images{
	Web: testweb("v1"), WebNext: testweb("v2"),
	Sidecar: testweb("v1"), SidecarNext: testweb("v2"),
	Log:      testweb("v1"),
	PortFlag: "-addr=:%d",
	Node:     node,
})
