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

// Package utils runs commands for the e2e suite the way a user would.
package utils

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
)

// Run executes cmd from the project directory and returns its combined
// output; a non-zero exit is an error carrying that output.
func Run(cmd *exec.Cmd) (string, error) {
	dir, err := GetProjectDir()
	if err != nil {
		return "", err
	}
	cmd.Dir = dir
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "GO111MODULE=on")
	command := strings.Join(cmd.Args, " ")
	_, _ = fmt.Fprintf(GinkgoWriter, "running: %q\n", command)
	output, err := cmd.CombinedOutput()
	if err != nil {
		return string(output), fmt.Errorf("%q failed with error %q: %w", command, string(output), err)
	}
	return string(output), nil
}

// Kubectl runs the project's kubectl (bin/kubectl, the version of the
// control plane) against $KUBECONFIG.
func Kubectl(args ...string) (string, error) {
	dir, err := GetProjectDir()
	if err != nil {
		return "", err
	}
	return Run(exec.Command(filepath.Join(dir, "bin", "kubectl"), args...))
}

// GetNonEmptyLines splits output into its non-empty lines.
func GetNonEmptyLines(output string) []string {
	var res []string
	for _, line := range strings.Split(output, "\n") {
		if line != "" {
			res = append(res, line)
		}
	}
	return res
}

// GetProjectDir returns the repository root: the nearest directory above the
// working directory (where go test runs a package) that holds PROJECT.
func GetProjectDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return wd, fmt.Errorf("failed to get current working directory: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "PROJECT")); err == nil {
			return dir, nil
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("no PROJECT file above %s", wd)
		}
	}
}

// KubectlStdin runs the project's kubectl with stdin as its input (apply -f -).
func KubectlStdin(stdin string, args ...string) (string, error) {
	dir, err := GetProjectDir()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(dir, "bin", "kubectl"), args...)
	cmd.Stdin = strings.NewReader(stdin)
	return Run(cmd)
}
