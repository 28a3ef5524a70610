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

package plugin

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = DescribeTable("parseName accepts NAME and TYPE/NAME",
	func(arg, want string, ok bool) {
		got, err := parseName(arg)
		if !ok {
			Expect(err).To(HaveOccurred())
			return
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(want))
	},
	Entry("bare name", "web", "web", true),
	Entry("short name", "md/web", "web", true),
	Entry("printed form", "mydeployment.apps.mydeployment.io/web", "web", true),
	Entry("plural", "mydeployments/web", "web", true),
	Entry("another kind", "deployment/web", "", false),
	Entry("empty name", "md/", "", false),
)
