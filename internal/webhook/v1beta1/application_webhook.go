package v1beta1

import (
	"context"
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/application"
)

// SetupApplicationWebhookWithManager registers the Application's validating
// webhook; the MyDeployment it would make is checked by the MyDeployment's
// own validator, through mgr's client.
func SetupApplicationWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &appsv1beta1.Application{}).
		WithValidator(&ApplicationValidator{Deployments: &MyDeploymentValidator{Client: mgr.GetClient()}}).
		Complete()
}

// +kubebuilder:webhook:path=/validate-apps-mydeployment-io-v1beta1-application,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps.mydeployment.io,resources=applications,verbs=create;update,versions=v1beta1,name=vapplication-v1beta1.kb.io,admissionReviewVersions=v1

// ApplicationValidator refuses an Application whose children could never
// work, naming the field: a name its children cannot carry, a Service port
// whose targetPort names no container port, duplicate port names, an
// Ingress without the Service or with a backend other than it, and
// whatever the MyDeployment it makes would be refused for.
type ApplicationValidator struct {
	Deployments *MyDeploymentValidator
}

var _ admission.Validator[*appsv1beta1.Application] = &ApplicationValidator{}

// ValidateCreate implements admission.Validator: every error at once.
func (v *ApplicationValidator) ValidateCreate(ctx context.Context, app *appsv1beta1.Application) (admission.Warnings, error) {
	return v.validate(ctx, nil, app)
}

// ValidateUpdate implements admission.Validator; the pods' selector
// (defaulted or given) may not change, as the MyDeployment's may not.
func (v *ApplicationValidator) ValidateUpdate(ctx context.Context, oldApp, app *appsv1beta1.Application) (admission.Warnings, error) {
	return v.validate(ctx, oldApp, app)
}

// ValidateDelete implements admission.Validator: deletion is always allowed.
func (v *ApplicationValidator) ValidateDelete(context.Context, *appsv1beta1.Application) (admission.Warnings, error) {
	return nil, nil
}

func (v *ApplicationValidator) validate(ctx context.Context, oldApp, app *appsv1beta1.Application) (admission.Warnings, error) {
	errs := validateApplicationName(app)
	errs = append(errs, validateForm(app)...)
	errs = append(errs, validateMetadata(app)...)
	errs = append(errs, validatePorts(app)...)
	errs = append(errs, validateIngress(app)...)
	errs = append(errs, validateRoute(oldApp, app)...)
	if oldApp != nil {
		was, is := application.DeploymentSpec(oldApp).Selector, application.DeploymentSpec(app).Selector
		if !apiequality.Semantic.DeepEqual(was, is) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "deployment", "selector"), app.Spec.Deployment.Selector,
				"field is immutable (left out, it is "+appsv1beta1.AppNameLabel+": <name>)"))
		}
	}
	var warnings admission.Warnings
	if len(validateApplicationName(app)) == 0 && len(validateForm(app)) == 0 {
		w, mdErrs := v.validateDeployment(ctx, oldApp, app)
		warnings = w
		errs = append(errs, mdErrs...)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(appsv1beta1.GroupVersion.WithKind("Application").GroupKind(), app.Name, errs)
	}
	if app.Spec.Autoscaling != nil && app.Spec.Deployment.Replicas != nil {
		warnings = append(warnings, "spec.deployment.replicas is ignored with spec.autoscaling: the HorizontalPodAutoscaler sets the replicas")
	}
	return warnings, nil
}

// validateApplicationName: the name is the children's name and a label
// value on each of them (and the pods' default selector value), so at most
// 63 characters; with a Service, a DNS-1035 label (a letter first).
func validateApplicationName(app *appsv1beta1.Application) field.ErrorList {
	path := field.NewPath("metadata", "name")
	if app.Spec.Service != nil {
		if msgs := validation.IsDNS1035Label(app.Name); len(msgs) > 0 {
			return field.ErrorList{field.Invalid(path, app.Name, "the name of its Service: "+strings.Join(msgs, "; "))}
		}
	}
	if msgs := validation.IsValidLabelValue(app.Name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(path, app.Name, "the value of label "+appsv1beta1.ApplicationNameLabel+
			" on its children: "+strings.Join(msgs, "; "))}
	}
	return nil
}

// validateForm: spec.deployment is in one form, the five-line one (image,
// replicas, port) or the full one (template); in the five-line form the
// name is the container's, so a DNS-1123 label.
func validateForm(app *appsv1beta1.Application) field.ErrorList {
	d := app.Spec.Deployment
	path := field.NewPath("spec", "deployment")
	var errs field.ErrorList
	if d.Template != nil {
		const both = "may not be set with spec.deployment.template: give the five-line form (image, replicas, port) or the full form (template), not both"
		if d.Image != "" {
			errs = append(errs, field.Forbidden(path.Child("image"), both))
		}
		if d.Port != 0 {
			errs = append(errs, field.Forbidden(path.Child("port"), both))
		}
		return errs
	}
	if d.Image == "" {
		errs = append(errs, field.Required(path.Child("image"),
			"the five-line form needs an image (or give the full form: spec.deployment.template)"))
	}
	if msgs := validation.IsDNS1123Label(app.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), app.Name,
			"the name of its container (the five-line form): "+strings.Join(msgs, "; ")))
	}
	return errs
}

// validateMetadata: the labels and annotations given for each child are
// valid ones, and no label takes ApplicationNameLabel, which the
// Application sets itself.
func validateMetadata(app *appsv1beta1.Application) field.ErrorList {
	var errs field.ErrorList
	check := func(m *appsv1beta1.ChildMetadata, path *field.Path) {
		if m == nil {
			return
		}
		errs = append(errs, metav1validation.ValidateLabels(m.Labels, path.Child("labels"))...)
		if _, ok := m.Labels[appsv1beta1.ApplicationNameLabel]; ok {
			errs = append(errs, field.Forbidden(path.Child("labels").Key(appsv1beta1.ApplicationNameLabel),
				"set by the Application on each child"))
		}
		errs = append(errs, apimachineryvalidation.ValidateAnnotations(m.Annotations, path.Child("annotations"))...)
	}
	spec := field.NewPath("spec")
	check(app.Spec.Deployment.Metadata, spec.Child("deployment", "metadata"))
	if app.Spec.Service != nil {
		check(app.Spec.Service.Metadata, spec.Child("service", "metadata"))
	}
	if app.Spec.Ingress != nil {
		check(app.Spec.Ingress.Metadata, spec.Child("ingress", "metadata"))
	}
	if app.Spec.Route != nil {
		path := spec.Child("route", "metadata")
		check(app.Spec.Route.Metadata, path)
		if m := app.Spec.Route.Metadata; m != nil {
			if _, ok := m.Annotations[appsv1beta1.RouteRulesAnnotation]; ok {
				errs = append(errs, field.Forbidden(path.Child("annotations").Key(appsv1beta1.RouteRulesAnnotation),
					"set by the Application on its HTTPRoute"))
			}
		}
	}
	return errs
}

// maxRoutedNameLength: with a route, <name>-stable and <name>-canary name
// Services (at most 63 characters) during a canary.
const maxRoutedNameLength = validation.DNS1035LabelMaxLength - len(application.StableSuffix)

// validateRoute: the HTTPRoute routes to the Application's Service, so it
// needs one; no backendRef names the Services the Application makes for a
// canary's traffic (it sets those itself); and a name given a route (at
// creation, or when the route is added) leaves room for their suffix.
func validateRoute(oldApp, app *appsv1beta1.Application) field.ErrorList {
	if app.Spec.Route == nil {
		// Weight steps state the route's weight: without a route, nothing carries it.
		if application.WeightSteps(deploymentAnnotations(app)) {
			return field.ErrorList{field.Forbidden(field.NewPath("spec", "deployment", "metadata", "annotations").Key(appsv1beta1.CanaryStepsAnnotation),
				"weight steps need spec.route: they state the weight of the Application's route")}
		}
		return nil
	}
	if app.Spec.Service == nil {
		return field.ErrorList{field.Required(field.NewPath("spec", "service"), "an HTTPRoute routes to the Application's Service")}
	}
	var errs field.ErrorList
	if len(app.Name) > maxRoutedNameLength && (oldApp == nil || oldApp.Spec.Route == nil) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), app.Name, fmt.Sprintf("with spec.route, at most %d "+
			"characters: during a canary the Application makes Services <name>%s and <name>%s",
			maxRoutedNameLength, application.StableSuffix, application.CanarySuffix)))
	}
	rules := field.NewPath("spec", "route", "rules")
	for i, rule := range app.Spec.Route.Rules {
		for j, ref := range rule.BackendRefs {
			if n := string(ref.Name); (ref.Kind == nil || *ref.Kind == "Service") &&
				(n == app.Name+application.StableSuffix || n == app.Name+application.CanarySuffix) {
				errs = append(errs, field.Invalid(rules.Index(i).Child("backendRefs").Index(j).Child("name"), n,
					fmt.Sprintf("names a Service the Application makes for a canary's traffic, and weighs itself; name its Service, %q", app.Name)))
			}
		}
	}
	return errs
}

// validatePorts: container port names unique across the pod (the Service's
// ports may default from them), Service port names unique, and a named
// targetPort one of the containers' port names.
func validatePorts(app *appsv1beta1.Application) field.ErrorList {
	var errs field.ErrorList
	containerPorts := map[string]bool{}
	containers := field.NewPath("spec", "deployment", "template", "spec", "containers")
	for i, c := range application.DeploymentSpec(app).Template.Spec.Containers {
		for j, p := range c.Ports {
			if p.Name == "" {
				continue
			}
			if containerPorts[p.Name] {
				errs = append(errs, field.Duplicate(containers.Index(i).Child("ports").Index(j).Child("name"), p.Name))
			}
			containerPorts[p.Name] = true
		}
	}
	if app.Spec.Service == nil {
		return errs
	}
	ports := field.NewPath("spec", "service", "ports")
	names := map[string]bool{}
	for i, p := range app.Spec.Service.Ports {
		if p.Name != "" {
			if names[p.Name] {
				errs = append(errs, field.Duplicate(ports.Index(i).Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		if p.TargetPort.Type == intstr.String && p.TargetPort.StrVal != "" && !containerPorts[p.TargetPort.StrVal] {
			errs = append(errs, field.Invalid(ports.Index(i).Child("targetPort"), p.TargetPort.StrVal,
				"names no port of spec.deployment.template.spec.containers"))
		}
	}
	return errs
}

// validateIngress: the Ingress routes to the Application's Service, so it
// needs one, and every backend that names a Service names it (at one of its
// ports, when the port is named).
func validateIngress(app *appsv1beta1.Application) field.ErrorList {
	if app.Spec.Ingress == nil {
		return nil
	}
	path := field.NewPath("spec", "ingress")
	if app.Spec.Service == nil {
		return field.ErrorList{field.Required(field.NewPath("spec", "service"), "an Ingress routes to the Application's Service")}
	}
	portNames := map[string]bool{}
	for _, p := range application.ServiceSpec(app).Ports {
		portNames[p.Name] = true
	}
	var errs field.ErrorList
	check := func(b *networkingv1.IngressBackend, p *field.Path) {
		if b == nil || b.Service == nil {
			return
		}
		if b.Service.Name != app.Name {
			errs = append(errs, field.Invalid(p.Child("service", "name"), b.Service.Name,
				fmt.Sprintf("must be %q, the Application's Service", app.Name)))
		} else if n := b.Service.Port.Name; n != "" && !portNames[n] {
			errs = append(errs, field.Invalid(p.Child("service", "port", "name"), n, "names no port of the Application's Service"))
		}
	}
	check(app.Spec.Ingress.DefaultBackend, path.Child("defaultBackend"))
	for i, r := range app.Spec.Ingress.Rules {
		if r.HTTP == nil {
			continue
		}
		for j := range r.HTTP.Paths {
			check(&r.HTTP.Paths[j].Backend, path.Child("rules").Index(i).Child("http", "paths").Index(j).Child("backend"))
		}
	}
	return errs
}

// validateDeployment runs the MyDeployment validator on the MyDeployment
// the Application makes (defaults filled in); its errors are re-pathed from
// spec to spec.deployment.
func (v *ApplicationValidator) validateDeployment(ctx context.Context, oldApp, app *appsv1beta1.Application) (admission.Warnings, field.ErrorList) {
	// Controlled by the Application, as the MyDeployment it makes is.
	owner := metav1.NewControllerRef(app, appsv1beta1.GroupVersion.WithKind("Application"))
	md := &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace, Annotations: deploymentAnnotations(app),
			OwnerReferences: []metav1.OwnerReference{*owner}},
		Spec: application.DeploymentSpec(app),
	}
	var warnings admission.Warnings
	var err error
	if oldApp != nil {
		old := &appsv1beta1.MyDeployment{ObjectMeta: *md.ObjectMeta.DeepCopy(), Spec: application.DeploymentSpec(oldApp)}
		old.Annotations = deploymentAnnotations(oldApp)
		warnings, err = v.Deployments.ValidateUpdate(ctx, old, md)
	} else {
		warnings, err = v.Deployments.ValidateCreate(ctx, md)
	}
	if err == nil {
		return warnings, nil
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return warnings, field.ErrorList{field.Invalid(field.NewPath("spec", "deployment"), nil, err.Error())}
	}
	var errs field.ErrorList
	for _, c := range status.Status().Details.Causes {
		typ := field.ErrorType(c.Type)
		msg := strings.TrimPrefix(strings.TrimPrefix(c.Message, typ.String()), ": ")
		path := strings.Replace(c.Field, "spec.", "spec.deployment.", 1)
		if strings.HasPrefix(c.Field, "metadata.annotations") {
			path = "spec.deployment." + c.Field // the opt-ins given in spec.deployment.metadata
		}
		errs = append(errs, &field.Error{Type: typ, Field: path, Detail: msg, BadValue: field.OmitValueType{}})
	}
	return warnings, errs
}

// deploymentAnnotations are the annotations the Application gives its
// MyDeployment (spec.deployment.metadata), whose opt-ins (canary steps
// among them) the MyDeployment's validator checks.
func deploymentAnnotations(app *appsv1beta1.Application) map[string]string {
	if m := app.Spec.Deployment.Metadata; m != nil {
		return m.Annotations
	}
	return nil
}
