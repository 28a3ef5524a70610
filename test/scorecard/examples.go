package scorecard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	sigsjson "sigs.k8s.io/json"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/application"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// almExamples is the CSV annotation OLM shows as the "create" templates.
const almExamples = "alm-examples"

// CheckExamplesRollOut checks what a user gets from the CSV's alm-examples
// (the templates a console offers): there is one of each kind the CSV owns;
// each decodes into its api/v1beta1 type with no unknown or duplicate field
// (a typo the API server would drop); the MyDeployment it is, or that an
// Application makes (its defaults filled in as the controller does), has a
// non-empty selector that matches its template's labels (else the API
// server rejects it or the controller never owns a pod) and asks for at
// least one replica; and, simulated with the controller's own planner
// (simulateRollout), it reaches spec.replicas available pods from none and
// then rolls a new template out within its strategy's limits. An
// Application's Service must get at least one port.
func CheckExamplesRollOut(bundle *apimanifests.Bundle) (errs, log []string) {
	raw := bundle.CSV.GetAnnotations()[almExamples]
	if raw == "" {
		return []string{"the CSV has no alm-examples annotation: a console offers no MyDeployment to start from"}, nil
	}
	var examples []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &examples); err != nil {
		return []string{fmt.Sprintf("alm-examples is not a JSON array of objects: %v", err)}, nil
	}
	found := map[string]bool{}
	for i, ex := range examples {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(ex, &tm); err != nil {
			errs = append(errs, fmt.Sprintf("alm-examples[%d]: %v", i, err))
			continue
		}
		var md *appsv1beta1.MyDeployment
		var problems []string
		switch tm.GroupVersionKind() {
		case appsv1beta1.GroupVersion.WithKind("MyDeployment"):
			md, problems = decodeExample(ex)
		case appsv1beta1.GroupVersion.WithKind("Application"):
			md, problems = decodeApplication(ex)
		default:
			log = append(log, fmt.Sprintf("alm-examples[%d]: %s %s is not ours, skipped", i, tm.APIVersion, tm.Kind))
			continue
		}
		found[tm.Kind] = true
		label := fmt.Sprintf("alm-examples[%d] (%s %s)", i, tm.Kind, md.Name)
		if len(problems) == 0 {
			problems = specProblems(md)
		}
		if len(problems) == 0 {
			var summary string
			summary, problems = simulateRollout(md, rollout.Compute)
			log = append(log, label+": "+summary)
		}
		for _, p := range problems {
			errs = append(errs, label+": "+p)
		}
	}
	for _, kind := range ownedKinds(bundle) {
		if !found[kind] {
			errs = append(errs, fmt.Sprintf("alm-examples holds no %s %s: a console offers no template to create one",
				appsv1beta1.GroupVersion, kind))
		}
	}
	return errs, log
}

// ownedKinds are the kinds of our API group the CSV owns, MyDeployment
// always among them.
func ownedKinds(bundle *apimanifests.Bundle) []string {
	kinds := []string{"MyDeployment"}
	for _, c := range bundle.CSV.Spec.CustomResourceDefinitions.Owned {
		if strings.HasSuffix(c.Name, "."+appsv1beta1.GroupVersion.Group) && c.Version == appsv1beta1.GroupVersion.Version &&
			!slices.Contains(kinds, c.Kind) {
			kinds = append(kinds, c.Kind)
		}
	}
	return kinds
}

// decodeApplication decodes an Application example strictly, as
// decodeExample does, and returns the MyDeployment the controller would
// make of it; spec paths in its problems are the MyDeployment's.
func decodeApplication(raw []byte) (*appsv1beta1.MyDeployment, []string) {
	app := &appsv1beta1.Application{}
	md := &appsv1beta1.MyDeployment{}
	strict, err := sigsjson.UnmarshalStrict(raw, app, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	md.Name = app.Name
	if err != nil {
		return md, []string{fmt.Sprintf("does not decode as an Application: %v", err)}
	}
	var problems []string
	for _, e := range strict {
		problems = append(problems, fmt.Sprintf("field the API would drop or reject: %v", e))
	}
	md.Spec = application.DeploymentSpec(app)
	if svc := application.ServiceSpec(app); svc != nil && len(svc.Ports) == 0 && svc.ClusterIP != corev1.ClusterIPNone {
		problems = append(problems, "spec.service has no ports and no container declares one: the API server refuses its Service")
	}
	return md, problems
}

// decodeExample decodes one example the way the API server reads JSON
// (case-sensitive) and reports every unknown or duplicate field.
func decodeExample(raw []byte) (*appsv1beta1.MyDeployment, []string) {
	md := &appsv1beta1.MyDeployment{}
	strict, err := sigsjson.UnmarshalStrict(raw, md, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return md, []string{fmt.Sprintf("does not decode as a MyDeployment: %v", err)}
	}
	var problems []string
	for _, e := range strict {
		problems = append(problems, fmt.Sprintf("field the API would drop or reject: %v", e))
	}
	return md, problems
}

// specProblems reports a selector that is missing, invalid, empty, or
// does not select the pods the template makes, and an example of 0 replicas
// (nothing to show, nothing to simulate).
func specProblems(md *appsv1beta1.MyDeployment) []string {
	if md.Spec.Selector == nil {
		return []string{"spec.selector is missing"}
	}
	sel, err := metav1.LabelSelectorAsSelector(md.Spec.Selector)
	if err != nil {
		return []string{fmt.Sprintf("spec.selector is invalid: %v", err)}
	}
	if sel.Empty() {
		return []string{"spec.selector is empty: it would select every pod in the namespace"}
	}
	if !sel.Matches(labels.Set(md.Spec.Template.Labels)) {
		return []string{fmt.Sprintf("spec.selector %q does not match spec.template.metadata.labels %v: the controller would own none of its pods",
			sel, md.Spec.Template.Labels)}
	}
	if ptr.Deref(md.Spec.Replicas, 1) < 1 {
		return []string{"spec.replicas is 0: the example would run nothing"}
	}
	return nil
}
