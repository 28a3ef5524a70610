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
	"context"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Shell completion: cobra's hidden __complete command answers what a
// shell's completion script (kubectl-mydeployment completion bash|zsh|...)
// or kubectl's plugin completion asks; kubectl 1.26+ runs the executable
// kubectl_complete-mydeployment on PATH for `kubectl mydeployment <TAB>`,
// and the one this project ships runs `kubectl-mydeployment __complete`.
// Verbs complete from the command tree; NAME arguments from the
// MyDeployments of the namespace the flags name; -n from the namespaces.

// completeNames completes a command's first argument with the names of
// the MyDeployments in the flags' namespace; nothing when they cannot be
// read (no file names either).
func completeNames(f *factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		t, err := f.target("")
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var l appsv1beta1.MyDeploymentList
		if err := t.c.List(completionContext(cmd), &l, client.InNamespace(t.namespace)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for _, md := range l.Items {
			if strings.HasPrefix(md.Name, toComplete) {
				names = append(names, md.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNamespaces completes -n with the cluster's namespaces.
func completeNamespaces(f *factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, err := f.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var l corev1.NamespaceList
		if err := c.List(completionContext(cmd), &l); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for _, ns := range l.Items {
			if strings.HasPrefix(ns.Name, toComplete) {
				names = append(names, ns.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// enableCompletion completes the NAME of every command of root whose first
// argument is a MyDeployment's NAME and that completes nothing yet, and
// -n with namespaces.
func enableCompletion(root *cobra.Command, f *factory) {
	_ = root.RegisterFlagCompletionFunc("namespace", completeNamespaces(f))
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		if fields := strings.Fields(cmd.Use); cmd.ValidArgsFunction == nil && len(fields) > 1 && fields[1] == "NAME" {
			cmd.ValidArgsFunction = completeNames(f)
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completionContext is cmd's context, or a background one (cobra runs
// completion functions without one when called as __complete directly).
func completionContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
