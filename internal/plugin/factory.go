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
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// scheme knows the built-in types and MyDeployment.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := appsv1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// factory turns kubectl's standard connection flags (--kubeconfig,
// -n/--namespace, --context, --cluster, --user, --server, --token,
// --request-timeout, ...) into a client and a namespace.
type factory struct {
	config clientcmd.ClientConfig
}

// newFactory binds the standard kubectl connection flags to flags.
func newFactory(flags *pflag.FlagSet) *factory {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	flags.StringVar(&rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "",
		"Path to the kubeconfig file to use for CLI requests.")
	overrides := &clientcmd.ConfigOverrides{}
	clientcmd.BindOverrideFlags(overrides, flags, clientcmd.RecommendedConfigOverrideFlags(""))
	return &factory{config: clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)}
}

// Namespace is the namespace of -n, else the kubeconfig context's, else "default".
func (f *factory) Namespace() (string, error) {
	ns, _, err := f.config.Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// Client returns a controller-runtime client for the flags' cluster.
func (f *factory) Client() (client.Client, error) {
	cfg, err := f.config.ClientConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// target is what a command operates on: a client, a namespace and a name.
type target struct {
	c         client.Client
	namespace string
	name      string
}

// newTarget resolves the client and namespace for the object called name.
func (f *factory) target(arg string) (*target, error) {
	name, err := parseName(arg)
	if err != nil {
		return nil, err
	}
	return f.targetNamed(name)
}

// targetNamed is the target of name in the flags' namespace.
func (f *factory) targetNamed(name string) (*target, error) {
	ns, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	c, err := f.Client()
	if err != nil {
		return nil, err
	}
	return &target{c: c, namespace: ns, name: name}, nil
}

// resourceNames are the spellings of the resource accepted before "/".
var resourceNames = []string{"md", "mydeployment", "mydeployments",
	"mydeployment." + appsv1beta1.GroupVersion.Group, "mydeployments." + appsv1beta1.GroupVersion.Group}

// parseName accepts NAME or TYPE/NAME (as kubectl does, e.g. md/web or the
// resourceString form the plugin prints).
func parseName(arg string) (string, error) {
	kind, name, found := strings.Cut(arg, "/")
	if !found {
		return arg, nil
	}
	for _, n := range resourceNames {
		if strings.EqualFold(kind, n) && name != "" {
			return name, nil
		}
	}
	return "", fmt.Errorf("%q is not a MyDeployment: use NAME or mydeployment/NAME", arg)
}
