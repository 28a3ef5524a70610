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
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// asUnstructuredList is items as kubectl get -o json|yaml|... prints
// several objects: a v1 List of them, each with its apiVersion and kind.
func asUnstructuredList(items []appsv1beta1.MyDeployment) (*unstructured.UnstructuredList, error) {
	list := &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}}
	gvk := appsv1beta1.GroupVersion.WithKind("MyDeployment")
	for i := range items {
		md := items[i].DeepCopy()
		md.SetGroupVersionKind(gvk)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(md)
		if err != nil {
			return nil, fmt.Errorf("converting %s: %w", md.Name, err)
		}
		list.Items = append(list.Items, unstructured.Unstructured{Object: obj})
	}
	return list, nil
}

// watch prints every change of the listed MyDeployments after rv, as
// kubectl get -w does (a row per event, no header again; each object
// through the printer), until the server ends the watch or ctx is done.
func (l *listing) watch(ctx context.Context, f *factory, sel labels.Selector, rv string) error {
	c, err := f.watchClient()
	if err != nil {
		return err
	}
	opts := []client.ListOption{client.InNamespace(l.namespace), client.MatchingLabelsSelector{Selector: sel},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}}}
	if l.name != "" {
		opts = append(opts, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", l.name)})
	}
	w, err := c.Watch(ctx, &appsv1beta1.MyDeploymentList{}, opts...)
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watching: %w", errorFrom(ev.Object))
			}
			md, isMD := ev.Object.(*appsv1beta1.MyDeployment)
			if !isMD || ev.Type == watch.Bookmark {
				continue
			}
			if err := l.print(ctx, []appsv1beta1.MyDeployment{*md}, false); err != nil {
				return err
			}
		}
	}
}

// errorFrom is the error a watch's Error event carries.
func errorFrom(obj runtime.Object) error {
	if s, ok := obj.(interface{ Error() string }); ok {
		return errors.New(s.Error())
	}
	return fmt.Errorf("%v", obj)
}

// watchClient is a client that can also watch, for the flags' cluster.
func (f *factory) watchClient() (client.WithWatch, error) {
	cfg, err := f.config.ClientConfig()
	if err != nil {
		return nil, err
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme})
}

// outputFlags are kubectl get's -o and the flags of its printers.
type outputFlags struct {
	format            string
	showManagedFields bool
	allowMissingKeys  bool
}

// outputFormats are -o's values (a template follows "=" or is a file's).
var outputFormats = []string{"go-template", "go-template-file", "json", "jsonpath", "jsonpath-as-json", "jsonpath-file",
	"name", "wide", "yaml"}

func (f *outputFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.format, "output", "o", "", "Output format. One of: ("+strings.Join(outputFormats, ", ")+").")
	cmd.Flags().BoolVar(&f.showManagedFields, "show-managed-fields", false,
		"If true, keep the managedFields when printing objects in JSON or YAML format.")
	cmd.Flags().BoolVar(&f.allowMissingKeys, "allow-missing-template-keys", true,
		"If true, ignore any errors in templates when a field or map key is missing in the template. Only applies to golang and jsonpath output formats.")
}

// printer is kubectl's printer for -o (cli-runtime's, each object typed
// with its apiVersion and kind), nil for the table ("" or wide); an
// unknown format is kubectl's error.
func (f *outputFlags) printer() (printers.ResourcePrinter, error) {
	format, arg, _ := strings.Cut(f.format, "=")
	var p printers.ResourcePrinter
	switch format {
	case "", "wide":
		if arg != "" {
			break
		}
		return nil, nil
	case "json":
		p = &printers.JSONPrinter{}
	case "yaml":
		p = &printers.YAMLPrinter{}
	case "name":
		p = &printers.NamePrinter{}
	case "jsonpath", "jsonpath-as-json", "jsonpath-file", "go-template", "go-template-file":
		return f.templatePrinter(format, arg)
	}
	if p == nil {
		return nil, fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s",
			f.format, strings.Join(outputFormats, ","))
	}
	if !f.showManagedFields {
		p = &printers.OmitManagedFieldsPrinter{Delegate: p}
	}
	return printers.NewTypeSetter(scheme).ToPrinter(p), nil
}

// templatePrinter is the jsonpath or go-template printer of tmpl (a
// file's name for the -file formats).
func (f *outputFlags) templatePrinter(format, tmpl string) (printers.ResourcePrinter, error) {
	if tmpl == "" {
		return nil, fmt.Errorf("template format specified but no template given")
	}
	if strings.HasSuffix(format, "-file") {
		data, err := os.ReadFile(tmpl)
		if err != nil {
			return nil, fmt.Errorf("error reading --template %s, %v", tmpl, err)
		}
		tmpl = string(data)
	}
	var p printers.ResourcePrinter
	if strings.HasPrefix(format, "jsonpath") {
		jp, err := printers.NewJSONPathPrinter(tmpl)
		if err != nil {
			return nil, fmt.Errorf("error parsing jsonpath %s, %v", tmpl, err)
		}
		jp.AllowMissingKeys(f.allowMissingKeys)
		jp.EnableJSONOutput(format == "jsonpath-as-json")
		p = jp
	} else {
		gp, err := printers.NewGoTemplatePrinter([]byte(tmpl))
		if err != nil {
			return nil, fmt.Errorf("error parsing template %s, %v", tmpl, err)
		}
		gp.AllowMissingKeys(f.allowMissingKeys)
		p = gp
	}
	return printers.NewTypeSetter(scheme).ToPrinter(p), nil
}
