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

// Package v1beta1 holds the MyDeployment admission webhook: it adds to the
// CRD's own rules what they cannot check, that the pod template is a Pod
// kube-apiserver would accept and that the opt-in annotations
// (internal/optin) have values that can work.
package v1beta1

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
)

// SetupMyDeploymentWebhookWithManager registers the validating webhook; its
// dry-run Pod creates go through mgr's client.
func SetupMyDeploymentWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &appsv1beta1.MyDeployment{}).
		WithValidator(&MyDeploymentValidator{Client: mgr.GetClient()}).
		Complete()
}

// +kubebuilder:webhook:path=/validate-apps-mydeployment-io-v1beta1-mydeployment,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps.mydeployment.io,resources=mydeployments,verbs=create;update,versions=v1beta1,name=vmydeployment-v1beta1.kb.io,admissionReviewVersions=v1

// MyDeploymentValidator refuses a MyDeployment whose pod template could
// never become a Pod, as kube-apiserver refuses such a Deployment: it asks
// kube-apiserver itself, with a server-side dry-run create of the Pod the
// controller would make, so the rules are exactly the cluster's own.
type MyDeploymentValidator struct {
	Client client.Client
}

var _ admission.Validator[*appsv1beta1.MyDeployment] = &MyDeploymentValidator{}

// ValidateCreate implements admission.Validator. Every field error is
// returned at once: the selector's, the opt-in annotations' (internal/optin/modules)
// and, when the selector is sound, the pod template's.
func (v *MyDeploymentValidator) ValidateCreate(ctx context.Context, md *appsv1beta1.MyDeployment) (admission.Warnings, error) {
	errs := validateSelector(md)
	_, optinErrs := modules.Parse(md)
	return v.refuse(ctx, md, errs, optinErrs, len(errs) == 0)
}

// refuse returns md's Invalid error for the selector and opt-in errors given
// and, when checkTemplate is set, the template's dry-run errors; nil and the
// dry run's warnings when there are none.
func (v *MyDeploymentValidator) refuse(ctx context.Context, md *appsv1beta1.MyDeployment, selectorErrs, optinErrs field.ErrorList, checkTemplate bool) (admission.Warnings, error) {
	errs := append(selectorErrs, optinErrs...)
	var warnings admission.Warnings
	if checkTemplate {
		var templateErrs field.ErrorList
		warnings, templateErrs = v.validateTemplate(ctx, md)
		errs = append(errs, templateErrs...)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(appsv1beta1.GroupVersion.WithKind("MyDeployment").GroupKind(), md.Name, errs)
	}
	return warnings, nil
}

// validateSelector checks the selector's syntax (matchExpressions operators
// and values, label keys), which the CRD's rules do not, and that it selects
// the template's labels, as Deployment's validation does (the CRD's rules
// check that too; a CRD installed before them does not).
func validateSelector(md *appsv1beta1.MyDeployment) field.ErrorList {
	path := field.NewPath("spec", "selector")
	errs := metav1validation.ValidateLabelSelector(md.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(errs) > 0 || md.Spec.Selector == nil {
		return errs
	}
	sel, err := metav1.LabelSelectorAsSelector(md.Spec.Selector)
	if err != nil {
		return field.ErrorList{field.Invalid(path, md.Spec.Selector, err.Error())}
	}
	if !sel.Empty() && !sel.Matches(labels.Set(md.Spec.Template.Labels)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "template", "metadata", "labels"),
			md.Spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

// ValidateUpdate implements admission.Validator; an unchanged template is
// not checked again (so scaling or pausing never fails on it). A changed
// template must still be selected by the (immutable) selector. The opt-in
// annotations are checked when they or the strategy type change (so a
// partitioned object cannot switch to Recreate), not otherwise: an object
// admitted before this check can still be scaled, and annotated by the
// controller, while its bad value stands (the controller reports it).
func (v *MyDeploymentValidator) ValidateUpdate(ctx context.Context, oldMD, md *appsv1beta1.MyDeployment) (admission.Warnings, error) {
	var optinErrs field.ErrorList
	if optInChanged(oldMD, md) {
		_, optinErrs = modules.Parse(md)
	}
	optinErrs = append(optinErrs, adoptFromChanged(oldMD, md)...)
	if apiequality.Semantic.DeepEqual(oldMD.Spec.Template, md.Spec.Template) {
		return v.refuse(ctx, md, nil, optinErrs, false)
	}
	errs := validateSelector(md)
	return v.refuse(ctx, md, errs, optinErrs, len(errs) == 0)
}

// optInChanged reports whether an update touches what modules.Parse reads:
// an opt-in annotation's presence or value, or the strategy type.
func optInChanged(oldMD, md *appsv1beta1.MyDeployment) bool {
	if oldMD.Spec.Strategy.Type != md.Spec.Strategy.Type {
		return true
	}
	for _, k := range modules.Annotations {
		ov, oldOK := oldMD.Annotations[k]
		nv, newOK := md.Annotations[k]
		if oldOK != newOK || ov != nv {
			return true
		}
	}
	return false
}

// adoptFromChanged refuses an update that adds or changes adopt-from: a
// MyDeployment takes over a Deployment's pods only from its creation, before
// it made pods of its own. Removing it is allowed (the controller does once
// the hand-over is done).
func adoptFromChanged(oldMD, md *appsv1beta1.MyDeployment) field.ErrorList {
	v, ok := md.Annotations[appsv1beta1.AdoptFromAnnotation]
	if ov, oldOK := oldMD.Annotations[appsv1beta1.AdoptFromAnnotation]; !ok || oldOK && ov == v {
		return nil
	}
	return field.ErrorList{field.Forbidden(optin.Path(appsv1beta1.AdoptFromAnnotation),
		"may only be set when the MyDeployment is created (kubectl mydeployment migrate creates it so)")}
}

// ValidateDelete implements admission.Validator: deletion is always allowed.
func (v *MyDeploymentValidator) ValidateDelete(context.Context, *appsv1beta1.MyDeployment) (admission.Warnings, error) {
	return nil, nil
}

// validateTemplate dry-runs the create of md's pod. An Invalid answer gives
// its causes as field errors, each re-pathed under spec.template. Any other
// refusal (quota, Pod Security admission, a namespace being deleted) depends
// on the moment, not on the template: like a Deployment, the MyDeployment is
// accepted, with a warning.
func (v *MyDeploymentValidator) validateTemplate(ctx context.Context, md *appsv1beta1.MyDeployment) (admission.Warnings, field.ErrorList) {
	t := md.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: md.Name + "-",
			Namespace:    md.Namespace,
			Labels:       t.Labels,
			Annotations:  t.Annotations,
			Finalizers:   t.Finalizers,
		},
		Spec: t.Spec,
	}
	err := v.Client.Create(ctx, pod, client.DryRunAll)
	switch {
	case err == nil:
		return nil, nil
	case apierrors.IsInvalid(err):
		return nil, templateErrors(err)
	default:
		logf.FromContext(ctx).Info("pod template dry run refused for a reason other than validity", "error", err.Error())
		return admission.Warnings{fmt.Sprintf("a pod from spec.template would be refused now: %v", err)}, nil
	}
}

// templateErrors turns the causes of a Pod's Invalid error into field errors
// of the MyDeployment (spec.containers[0].image -> spec.template.spec...).
func templateErrors(err error) field.ErrorList {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "template"), nil, err.Error())}
	}
	var errs field.ErrorList
	for _, c := range status.Status().Details.Causes {
		path := "spec.template." + c.Field
		if c.Field == "" {
			path = "spec.template"
		}
		// The cause message starts with its type ("Invalid value: "), which
		// field.Error prints again: keep only what follows.
		typ := field.ErrorType(c.Type)
		msg := strings.TrimPrefix(strings.TrimPrefix(c.Message, typ.String()), ": ")
		errs = append(errs, &field.Error{Type: typ, Field: path, Detail: msg, BadValue: field.OmitValueType{}})
	}
	return errs
}
