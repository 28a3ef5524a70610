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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		return listedNames(completionContext(cmd), t.c, &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{
			APIVersion: appsv1beta1.GroupVersion.String(), Kind: "MyDeploymentList"}}, toComplete, client.InNamespace(t.namespace))
	}
}

// completeNamespaces completes -n with the cluster's namespaces.
func completeNamespaces(f *factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, err := f.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return listedNames(completionContext(cmd), c, &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{
			APIVersion: "v1", Kind: "NamespaceList"}}, toComplete, nil)
	}
}

// listedNames lists the objects of l (metadata only) and completes the
// names that start with prefix; none when the list fails.
func listedNames(ctx context.Context, c client.Client, l *metav1.PartialObjectMetadataList, prefix string,
	opt client.ListOption) ([]cobra.Completion, cobra.ShellCompDirective) {
	var opts []client.ListOption
	if opt != nil {
		opts = append(opts, opt)
	}
	if err := c.List(ctx, l, opts...); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []cobra.Completion
	for _, item := range l.Items {
		if strings.HasPrefix(item.Name, prefix) {
			names = append(names, item.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
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
