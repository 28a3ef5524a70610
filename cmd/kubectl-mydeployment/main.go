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

// Command kubectl-mydeployment is a kubectl plugin ("kubectl mydeployment")
// for MyDeployments: rollout status/history/undo/restart/pause/resume/
// partition/promote, get, and migrate and eject.
package main

import (
	"os"

	"github.com/mydeployment-io/mydeployment-operator/internal/plugin"
)

func main() {
	os.Exit(plugin.Run(os.Args[1:], plugin.Options{
		IOStreams: plugin.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		StopAfter: os.Getenv(plugin.StopAfterEnv),
	}))
}
