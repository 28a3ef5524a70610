// Package admission is the table of invalid MyDeployments that admission
// must refuse, each with the field its message must name. Two envtest
// suites run it against a real kube-apiserver: internal/controller runs the
// rows the CRD's own schema and CEL rules refuse (no webhook installed), and
// internal/webhook/v1beta1 runs every row with the validating webhook
// installed, as a cluster has it.
package admission

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/hooks"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/podreplacement"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/weights"
)

// By says which part of admission refuses a row.
type By int

const (
	// CRD: the CRD's OpenAPI schema, its CEL rules or the API server's
	// object metadata checks; no webhook needed.
	CRD By = iota
	// Webhook: only the validating webhook refuses it.
	Webhook
)

// Case is one invalid MyDeployment.
type Case struct {
	Name string
	// Change makes Valid's object invalid (typed fields).
	Change func(*appsv1beta1.MyDeployment)
	// Raw changes the object as JSON, for values a typed field cannot hold
	// (numbers beyond int32, wrong types); applied after Change.
	Raw func(obj map[string]any)
	// Update: create the valid object first, then apply the change as an update.
	Update bool
	// Before changes Valid's object before an Update case creates it (a
	// selector form other than matchLabels: the selector is immutable).
	Before func(*appsv1beta1.MyDeployment)
	// Field must appear in the error; Why too (case-insensitive).
	Field, Why string
	By         By
}

// Submit sends the case's object to the API server in namespace ns (for an
// Update case: creates the valid object, then updates it, retrying on
// conflicts with a controller writing the object meanwhile) and returns the
// refusal; err is set when the setup failed or the object was accepted.
func (c Case) Submit(ctx context.Context, cl client.Client, ns string) (refusal, err error) {
	md := Valid(ns, "bad")
	if !c.Update {
		obj, err := c.changed(md)
		if err != nil {
			return nil, err
		}
		return accepted(c.Name, cl.Create(ctx, obj))
	}
	if c.Before != nil {
		c.Before(md)
	}
	if err := cl.Create(ctx, md); err != nil {
		return nil, fmt.Errorf("creating the valid object: %w", err)
	}
	for attempt := 0; ; attempt++ {
		cur := &appsv1beta1.MyDeployment{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(md), cur); err != nil {
			return nil, fmt.Errorf("reading the valid object: %w", err)
		}
		obj, err := c.changed(cur)
		if err != nil {
			return nil, err
		}
		refusal = cl.Update(ctx, obj)
		if !apierrors.IsConflict(refusal) || attempt == 9 {
			return accepted(c.Name, refusal)
		}
	}
}

// changed applies the case's changes to md.
func (c Case) changed(md *appsv1beta1.MyDeployment) (client.Object, error) {
	if c.Change != nil {
		c.Change(md)
	}
	if c.Raw == nil {
		return md, nil
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(md)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetGroupVersionKind(appsv1beta1.GroupVersion.WithKind("MyDeployment"))
	c.Raw(u.Object)
	return u, nil
}

func accepted(name string, refusal error) (error, error) {
	if refusal == nil {
		return nil, fmt.Errorf("%q was accepted", name)
	}
	return refusal, nil
}

// Valid returns a MyDeployment every admission step accepts.
func Valid(ns, name string) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1beta1.MyDeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
}

func rolling(surge, unavailable intstr.IntOrString) func(*appsv1beta1.MyDeployment) {
	return func(m *appsv1beta1.MyDeployment) {
		m.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}
	}
}

// expressions makes the selector matchExpressions alone.
func expressions(reqs ...metav1.LabelSelectorRequirement) func(*appsv1beta1.MyDeployment) {
	return func(m *appsv1beta1.MyDeployment) {
		m.Spec.Selector = &metav1.LabelSelector{MatchExpressions: reqs}
	}
}

func rawRolling(surge, unavailable any) func(map[string]any) {
	return func(o map[string]any) {
		spec(o)["strategy"] = map[string]any{"type": "RollingUpdate",
			"rollingUpdate": map[string]any{"maxSurge": surge, "maxUnavailable": unavailable}}
	}
}

func spec(obj map[string]any) map[string]any { return obj["spec"].(map[string]any) }

func podSpec(f func(*corev1.PodSpec)) func(*appsv1beta1.MyDeployment) {
	return func(m *appsv1beta1.MyDeployment) { f(&m.Spec.Template.Spec) }
}

var (
	partitionField      = "metadata.annotations[" + appsv1beta1.PartitionAnnotation + "]"
	updateModeField     = "metadata.annotations[" + appsv1beta1.UpdateModeAnnotation + "]"
	canaryField         = "metadata.annotations[" + appsv1beta1.CanaryStepsAnnotation + "]"
	onFailureField      = "metadata.annotations[" + appsv1beta1.OnFailureAnnotation + "]"
	drainField          = "metadata.annotations[" + appsv1beta1.DrainAnnotation + "]"
	adoptFromField      = "metadata.annotations[" + appsv1beta1.AdoptFromAnnotation + "]"
	adoptRevsField      = "metadata.annotations[" + appsv1beta1.AdoptRevisionsAnnotation + "]"
	analysisField       = "metadata.annotations[" + appsv1beta1.AnalysisAnnotation + "]"
	headroomField       = "metadata.annotations[" + weights.HeadroomAnnotation + "]"
	drainDelayField     = "metadata.annotations[" + weights.AbortDrainDelayAnnotation + "]"
	hooksField          = "metadata.annotations[" + hooks.Annotation + "]"
	podReplacementField = "metadata.annotations[" + podreplacement.Annotation + "]"
	// wavesKey is the waves module's annotation (internal/optin/waves.Annotation).
	wavesKey   = "apps.mydeployment.io/waves"
	wavesField = "metadata.annotations[" + wavesKey + "]"
)

// analysed sets canary steps and an analysis whose fields are the valid
// ones with fields added or replaced (JSON members, e.g. `"count":0`).
func analysed(fields string) func(*appsv1beta1.MyDeployment) {
	return func(m *appsv1beta1.MyDeployment) {
		annotate(appsv1beta1.CanaryStepsAnnotation, "1, 50%, 100%")(m)
		annotate(appsv1beta1.AnalysisAnnotation, `{"prometheus":"http://prometheus:9090","interval":"30s",`+fields+
			`"queries":[{"name":"success-rate","query":"rate{revision=\"{{revision}}\"}","threshold":">= 0.99"}]}`)(m)
	}
}

// annotate sets one annotation of the MyDeployment.
func annotate(key, value string) func(*appsv1beta1.MyDeployment) {
	return func(m *appsv1beta1.MyDeployment) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[key] = value
	}
}

func recreate(m *appsv1beta1.MyDeployment) {
	m.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
}

// Cases returns the whole table.
func Cases() []Case {
	return []Case{
		// Selector.
		{Name: "no selector", Change: func(m *appsv1beta1.MyDeployment) { m.Spec.Selector = nil },
			Field: "spec.selector", Why: "Required"},
		{Name: "empty selector", Change: func(m *appsv1beta1.MyDeployment) { m.Spec.Selector = &metav1.LabelSelector{} },
			Field: "spec.selector", Why: "empty selector"},
		{Name: "selector not matching the template labels", Change: func(m *appsv1beta1.MyDeployment) {
			m.Spec.Template.Labels = map[string]string{"app": "other"}
		}, Field: "spec.template.metadata.labels", Why: "does not match template"},
		{Name: "template without labels", Change: func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Labels = nil },
			Field: "spec.template.metadata.labels", Why: "does not match template"},
		{Name: "label value too long", Change: func(m *appsv1beta1.MyDeployment) {
			long := strings.Repeat("x", 64)
			m.Spec.Selector.MatchLabels["app"], m.Spec.Template.Labels["app"] = long, long
		}, Field: "spec.selector.matchLabels.app", Why: "may not be more than 63"},
		{Name: "selector changed after creation", Update: true, Change: func(m *appsv1beta1.MyDeployment) {
			m.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}}
			m.Spec.Template.Labels["tier"] = "front"
		}, Field: "spec.selector", Why: "field is immutable"},
		{Name: "matchExpressions with an unknown operator", Change: func(m *appsv1beta1.MyDeployment) {
			m.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near", Values: []string{"web"}}}
		}, Field: "spec.selector.matchExpressions[0].operator", Why: "not a valid selector operator", By: Webhook},
		{Name: "matchExpressions In without values", Change: func(m *appsv1beta1.MyDeployment) {
			m.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}
		}, Field: "spec.selector.matchExpressions[0].values", Why: "must be specified", By: Webhook},
		{Name: "matchExpressions not matching the template labels", Change: func(m *appsv1beta1.MyDeployment) {
			m.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front"}}}
		}, Field: "spec.template.metadata.labels", Why: "does not match template"},
		{Name: "matchExpressions In not matching the template label's value", Change: expressions(
			metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"api", "db"}}),
			Field: "spec.template.metadata.labels", Why: "does not match template"},
		{Name: "matchExpressions NotIn the template label's value", Change: expressions(
			metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}}),
			Field: "spec.template.metadata.labels", Why: "does not match template"},
		{Name: "matchExpressions Exists on a label the template lacks", Change: expressions(
			metav1.LabelSelectorRequirement{Key: "tier", Operator: metav1.LabelSelectorOpExists}),
			Field: "spec.template.metadata.labels", Why: "does not match template"},
		{Name: "matchExpressions DoesNotExist on a label the template has", Change: expressions(
			metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}),
			Field: "spec.template.metadata.labels", Why: "does not match template"},
		{Name: "matchExpressions selector and a template without labels", Change: func(m *appsv1beta1.MyDeployment) {
			expressions(metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}})(m)
			m.Spec.Template.Labels = nil
		}, Field: "spec.template.metadata.labels", Why: "does not match template"},
		// Bounds Deployment does not have: the CEL rule above needs them (cost).
		{Name: "more than 64 matchExpressions", Change: func(m *appsv1beta1.MyDeployment) {
			for i := range 65 {
				m.Spec.Selector.MatchExpressions = append(m.Spec.Selector.MatchExpressions,
					metav1.LabelSelectorRequirement{Key: fmt.Sprintf("k%d", i), Operator: metav1.LabelSelectorOpDoesNotExist})
			}
		}, Field: "spec.selector.matchExpressions", Why: "must have at most 64 items"},
		{Name: "more than 256 values in one matchExpressions item", Change: func(m *appsv1beta1.MyDeployment) {
			values := []string{"web"}
			for i := range 256 {
				values = append(values, fmt.Sprintf("v%d", i))
			}
			m.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: values}}
		}, Field: "spec.selector.matchExpressions[0].values", Why: "must have at most 256 items"},
		{Name: "template labels changed by an update so the matchLabels selector no longer matches", Update: true,
			Change: func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Labels = map[string]string{"app": "other"} },
			Field:  "spec.template.metadata.labels", Why: "does not match template"},
		{Name: "template labels changed by an update so the matchExpressions selector no longer matches", Update: true,
			Before: expressions(metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}),
			Change: func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Labels = map[string]string{"app": "other"} },
			Field:  "spec.template.metadata.labels", Why: "does not match template"},
		{Name: "selector label key not a qualified name", Change: func(m *appsv1beta1.MyDeployment) {
			m.Spec.Selector.MatchLabels["bad key"] = "x"
			m.Spec.Template.Labels["bad key"] = "x"
		}, Field: "spec.selector.matchLabels", Why: "name part must consist of", By: Webhook},

		// Numbers.
		{Name: "negative replicas", Change: func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](-1) },
			Field: "spec.replicas", Why: "greater than or equal to 0"},
		{Name: "replicas beyond int32", Raw: func(o map[string]any) { spec(o)["replicas"] = int64(1) << 40 },
			Field: "spec.replicas", Why: "format int32"},
		{Name: "replicas not a number", Raw: func(o map[string]any) { spec(o)["replicas"] = "three" },
			Field: "spec.replicas", Why: "must be of type integer"},
		{Name: "negative minReadySeconds", Change: func(m *appsv1beta1.MyDeployment) { m.Spec.MinReadySeconds = -1 },
			Field: "spec.minReadySeconds", Why: "greater than or equal to 0"},
		{Name: "minReadySeconds beyond int32", Raw: func(o map[string]any) { spec(o)["minReadySeconds"] = int64(1) << 33 },
			Field: "spec.minReadySeconds", Why: "format int32"},
		{Name: "negative revisionHistoryLimit", Change: func(m *appsv1beta1.MyDeployment) { m.Spec.RevisionHistoryLimit = ptr.To[int32](-1) },
			Field: "spec.revisionHistoryLimit", Why: "greater than or equal to 0"},
		{Name: "progressDeadlineSeconds 0", Change: func(m *appsv1beta1.MyDeployment) { m.Spec.ProgressDeadlineSeconds = ptr.To[int32](0) },
			Field: "spec.progressDeadlineSeconds", Why: "greater than or equal to 1"},
		{Name: "progressDeadlineSeconds not above minReadySeconds", Change: func(m *appsv1beta1.MyDeployment) {
			m.Spec.MinReadySeconds, m.Spec.ProgressDeadlineSeconds = 10, ptr.To[int32](10)
		}, Field: "spec.progressDeadlineSeconds", Why: "greater than minReadySeconds"},

		// Strategy.
		{Name: "maxSurge and maxUnavailable both 0", Change: rolling(intstr.FromInt32(0), intstr.FromInt32(0)),
			Field: "spec.strategy.rollingUpdate.maxUnavailable", Why: "may not be 0 when `maxSurge` is 0"},
		{Name: "maxSurge and maxUnavailable both 0%", Change: rolling(intstr.FromString("0%"), intstr.FromString("0%")),
			Field: "spec.strategy.rollingUpdate.maxUnavailable", Why: "may not be 0"},
		{Name: "maxSurge 00% and maxUnavailable 0% (both resolve to 0)", Change: rolling(intstr.FromString("00%"), intstr.FromString("0%")),
			Field: "spec.strategy.rollingUpdate.maxUnavailable", Why: "may not be 0 when `maxSurge` is 0"},
		{Name: "maxSurge 0 and maxUnavailable 000%", Change: rolling(intstr.FromInt32(0), intstr.FromString("000%")),
			Field: "spec.strategy.rollingUpdate.maxUnavailable", Why: "may not be 0 when `maxSurge` is 0"},
		{Name: "maxSurge and maxUnavailable both set to 0 by an update", Update: true,
			Change: rolling(intstr.FromInt32(0), intstr.FromInt32(0)),
			Field:  "spec.strategy.rollingUpdate.maxUnavailable", Why: "may not be 0"},
		{Name: "negative maxSurge", Change: rolling(intstr.FromInt32(-1), intstr.FromInt32(1)),
			Field: "spec.strategy.rollingUpdate.maxSurge", Why: "non-negative integer or a percent"},
		{Name: "maxSurge not a percent", Change: rolling(intstr.FromString("25"), intstr.FromInt32(1)),
			Field: "spec.strategy.rollingUpdate.maxSurge", Why: "non-negative integer or a percent"},
		{Name: "negative percent maxUnavailable", Change: rolling(intstr.FromInt32(1), intstr.FromString("-5%")),
			Field: "spec.strategy.rollingUpdate.maxUnavailable", Why: "non-negative integer or a percent"},
		{Name: "maxUnavailable over 100%", Change: rolling(intstr.FromInt32(1), intstr.FromString("101%")),
			Field: "spec.strategy.rollingUpdate.maxUnavailable", Why: "not be greater than 100%"},
		{Name: "maxUnavailable a percent of 20 digits", Change: rolling(intstr.FromInt32(1), intstr.FromString("99999999999999999999%")),
			Field: "spec.strategy.rollingUpdate.maxUnavailable", Why: "not be greater than 100%"},
		{Name: "maxUnavailable an integer beyond int32", Raw: rawRolling(1, int64(1)<<32),
			Field: "spec.strategy.rollingUpdate.maxUnavailable", Why: "must not be greater than 2147483647"},
		// Deployment accepts these (its validation parses the percent into an
		// int64) and its controller truncates the pod count they give to int32;
		// no pod count can come of them.
		{Name: "maxSurge a percent beyond int32", Change: rolling(intstr.FromString("99999999999%"), intstr.FromInt32(1)),
			Field: "spec.strategy.rollingUpdate.maxSurge", Why: "must not be greater than 2147483647"},
		{Name: "maxSurge a percent of 20 digits", Change: rolling(intstr.FromString("99999999999999999999%"), intstr.FromInt32(1)),
			Field: "spec.strategy.rollingUpdate.maxSurge", Why: "must not be greater than 2147483647"},
		{Name: "maxSurge an integer beyond int32", Raw: rawRolling(int64(1)<<32, 1),
			Field: "spec.strategy.rollingUpdate.maxSurge", Why: "must not be greater than 2147483647"},
		{Name: "maxSurge a fraction", Raw: func(o map[string]any) {
			spec(o)["strategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": 1.5}}
		}, Field: "spec.strategy.rollingUpdate.maxSurge", Why: "must be of type"},
		{Name: "rollingUpdate with Recreate", Change: func(m *appsv1beta1.MyDeployment) {
			one := intstr.FromInt32(1)
			m.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one}}
		}, Field: "spec.strategy.rollingUpdate", Why: "may not be specified when strategy `type` is 'Recreate'"},
		{Name: "unknown strategy type", Change: func(m *appsv1beta1.MyDeployment) { m.Spec.Strategy.Type = "BlueGreen" },
			Field: "spec.strategy.type", Why: "Unsupported value"},

		// Opt-in annotations (internal/optin): only the webhook reads them.
		{Name: "negative partition", Change: annotate(appsv1beta1.PartitionAnnotation, "-1"),
			Field: partitionField, Why: "must be a non-negative integer", By: Webhook},
		{Name: "partition over 100%", Change: annotate(appsv1beta1.PartitionAnnotation, "101%"),
			Field: partitionField, Why: "a percentage from 0% to 100%", By: Webhook},
		{Name: "partition not a number", Change: annotate(appsv1beta1.PartitionAnnotation, "half"),
			Field: partitionField, Why: `Invalid value: "half"`, By: Webhook},
		{Name: "empty partition", Change: annotate(appsv1beta1.PartitionAnnotation, ""),
			Field: partitionField, Why: `Invalid value: ""`, By: Webhook},
		{Name: "partition with Recreate", Change: func(m *appsv1beta1.MyDeployment) {
			recreate(m)
			annotate(appsv1beta1.PartitionAnnotation, "1")(m)
		}, Field: partitionField, Why: "needs spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "partition added to a Recreate object by an update", Update: true, Before: recreate,
			Change: annotate(appsv1beta1.PartitionAnnotation, "1"),
			Field:  partitionField, Why: "needs spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "strategy switched to Recreate while partitioned by an update", Update: true,
			Before: annotate(appsv1beta1.PartitionAnnotation, "50%"), Change: recreate,
			Field: partitionField, Why: "needs spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "empty canary steps", Change: annotate(appsv1beta1.CanaryStepsAnnotation, ""),
			Field: canaryField, Why: `Invalid value: "": must list at least one step`, By: Webhook},
		{Name: "canary step neither a size nor a pause", Change: annotate(appsv1beta1.CanaryStepsAnnotation, "1, half, 100%"),
			Field: canaryField, Why: `step 2 "half": must be a pod count ("1"), a percentage from 0% to 100%`, By: Webhook},
		{Name: "canary pause of a negative duration", Change: annotate(appsv1beta1.CanaryStepsAnnotation, "1, pause -5s"),
			Field: canaryField, Why: "a pause's duration must be positive", By: Webhook},
		{Name: "canary sizes decreasing", Change: annotate(appsv1beta1.CanaryStepsAnnotation, "50%, pause, 25%"),
			Field: canaryField, Why: "sizes must not decrease", By: Webhook},
		{Name: "canary weight not a percentage", Change: annotate(appsv1beta1.CanaryStepsAnnotation, "weight 5, 1"),
			Field: canaryField, Why: `step 1 "weight 5": a weight must be a percentage from 0% to 100%`, By: Webhook},
		{Name: "canary weights decreasing", Change: annotate(appsv1beta1.CanaryStepsAnnotation, "weight 10%, 1, weight 5%"),
			Field: canaryField, Why: "weights must not decrease", By: Webhook},
		{Name: "canary size before the first weight step", Change: annotate(appsv1beta1.CanaryStepsAnnotation, "1, weight 10%"),
			Field: canaryField, Why: `step 1 "1" comes before any weight step`, By: Webhook},
		{Name: "canary size beyond the weight stated before it", Change: annotate(appsv1beta1.CanaryStepsAnnotation, "weight 10%, 50%"),
			Field: canaryField, Why: `step 2 "50%" exceeds the weight stated at step 1 (10%)`, By: Webhook},
		{Name: "canary weight steps on a MyDeployment no Application controls", Change: annotate(appsv1beta1.CanaryStepsAnnotation, "weight 10%, 10%"),
			Field: canaryField, Why: "weight steps need an Application with spec.route", By: Webhook},
		{Name: "weight headroom without weight steps", Change: func(m *appsv1beta1.MyDeployment) {
			annotate(appsv1beta1.CanaryStepsAnnotation, "1, pause, 100%")(m)
			annotate(weights.HeadroomAnnotation, "2")(m)
		}, Field: headroomField, Why: "needs weight steps in " + appsv1beta1.CanaryStepsAnnotation, By: Webhook},
		{Name: "weight headroom below 1", Change: func(m *appsv1beta1.MyDeployment) {
			annotate(appsv1beta1.CanaryStepsAnnotation, "weight 10%, 10%")(m)
			annotate(weights.HeadroomAnnotation, "0.5")(m)
		}, Field: headroomField, Why: "must be a decimal from 1 to 10", By: Webhook},
		{Name: "abort drain delay without weight steps", Change: annotate(weights.AbortDrainDelayAnnotation, "30s"),
			Field: drainDelayField, Why: "needs weight steps in " + appsv1beta1.CanaryStepsAnnotation, By: Webhook},
		{Name: "abort drain delay beyond 10m", Change: func(m *appsv1beta1.MyDeployment) {
			annotate(appsv1beta1.CanaryStepsAnnotation, "weight 10%, 10%")(m)
			annotate(weights.AbortDrainDelayAnnotation, "1h")(m)
		}, Field: drainDelayField, Why: "must be a duration from 0s to 10m0s", By: Webhook},
		{Name: "route-weight record not as the Application writes it", Change: annotate(weights.RouteWeightAnnotation, "10"),
			Field: "metadata.annotations[" + weights.RouteWeightAnnotation + "]", Why: "must be written by the Application", By: Webhook},
		{Name: "canary steps with Recreate", Change: func(m *appsv1beta1.MyDeployment) {
			recreate(m)
			annotate(appsv1beta1.CanaryStepsAnnotation, "1, pause, 100%")(m)
		}, Field: canaryField, Why: "canary steps need spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "canary steps beside a partition", Change: func(m *appsv1beta1.MyDeployment) {
			annotate(appsv1beta1.PartitionAnnotation, "8")(m)
			annotate(appsv1beta1.CanaryStepsAnnotation, "1, pause, 100%")(m)
		}, Field: canaryField, Why: "cannot be set together with " + appsv1beta1.PartitionAnnotation, By: Webhook},
		{Name: "partition added to canary steps by an update", Update: true,
			Before: annotate(appsv1beta1.CanaryStepsAnnotation, "1, pause, 100%"), Change: annotate(appsv1beta1.PartitionAnnotation, "8"),
			Field: canaryField, Why: "cannot be set together with " + appsv1beta1.PartitionAnnotation, By: Webhook},
		{Name: "canary promote not as the plugin writes it", Change: annotate(appsv1beta1.CanaryPromoteAnnotation, "now"),
			Field: "metadata.annotations[" + appsv1beta1.CanaryPromoteAnnotation + "]", Why: `"<revision>/<step>" or "<revision>/full"`, By: Webhook},
		{Name: "analysis that is not JSON", Change: func(m *appsv1beta1.MyDeployment) {
			annotate(appsv1beta1.CanaryStepsAnnotation, "1, 100%")(m)
			annotate(appsv1beta1.AnalysisAnnotation, "success-rate >= 0.99")(m)
		}, Field: analysisField, Why: "must be a JSON object", By: Webhook},
		{Name: "analysis without canary steps", Change: func(m *appsv1beta1.MyDeployment) {
			analysed("")(m)
			delete(m.Annotations, appsv1beta1.CanaryStepsAnnotation)
		}, Field: analysisField, Why: "analysis needs " + appsv1beta1.CanaryStepsAnnotation, By: Webhook},
		{Name: "canary steps removed from an analysed object by an update", Update: true, Before: analysed(""),
			Change: func(m *appsv1beta1.MyDeployment) { delete(m.Annotations, appsv1beta1.CanaryStepsAnnotation) },
			Field:  analysisField, Why: "analysis needs " + appsv1beta1.CanaryStepsAnnotation, By: Webhook},
		{Name: "analysis with an unknown field", Change: analysed(`"inconclusiveLimit":2,`),
			Field: analysisField, Why: `unknown field "inconclusiveLimit"`, By: Webhook},
		{Name: "analysis prometheus not a URL", Change: analysed(`"prometheus":"prometheus:9090",`),
			Field: analysisField, Why: "must be an http or https URL", By: Webhook},
		{Name: "analysis interval under a second", Change: analysed(`"interval":"100ms",`),
			Field: analysisField, Why: `interval "100ms": must be a duration of at least 1s`, By: Webhook},
		{Name: "analysis count 0", Change: analysed(`"count":0,`),
			Field: analysisField, Why: "count 0: must be from 1 to 100", By: Webhook},
		{Name: "analysis failure limit negative", Change: analysed(`"failureLimit":-1,`),
			Field: analysisField, Why: "failureLimit -1: must not be negative", By: Webhook},
		{Name: "analysis query without a threshold operator", Change: func(m *appsv1beta1.MyDeployment) {
			annotate(appsv1beta1.CanaryStepsAnnotation, "1, 100%")(m)
			annotate(appsv1beta1.AnalysisAnnotation, `{"prometheus":"http://p:9090","queries":[{"name":"p99","query":"x","threshold":"0.3"}]}`)(m)
		}, Field: analysisField, Why: `queries[0]: threshold "0.3": must be ">= x", "<= x"`, By: Webhook},
		{Name: "analysis query with an unknown placeholder", Change: func(m *appsv1beta1.MyDeployment) {
			annotate(appsv1beta1.CanaryStepsAnnotation, "1, 100%")(m)
			annotate(appsv1beta1.AnalysisAnnotation, `{"prometheus":"http://p:9090","queries":[{"name":"p99","query":"x{pod=\"{{pod}}\"}","threshold":"<= 0.3"}]}`)(m)
		}, Field: analysisField, Why: `unknown placeholder "{{pod}}"`, By: Webhook},
		{Name: "analysis without queries", Change: func(m *appsv1beta1.MyDeployment) {
			annotate(appsv1beta1.CanaryStepsAnnotation, "1, 100%")(m)
			annotate(appsv1beta1.AnalysisAnnotation, `{"prometheus":"http://p:9090","queries":[]}`)(m)
		}, Field: analysisField, Why: "queries: must list from 1 to 10 queries", By: Webhook},
		{Name: "respect-pdb neither true nor false", Change: annotate(appsv1beta1.RespectPDBAnnotation, "yes"),
			Field: "metadata.annotations[" + appsv1beta1.RespectPDBAnnotation + "]", Why: `Unsupported value: "yes"`, By: Webhook},
		{Name: "pod-replacement not one of its values", Change: annotate(podreplacement.Annotation, "terminationComplete"),
			Field: podReplacementField, Why: `Unsupported value: "terminationComplete": supported values: "TerminationStarted", "TerminationComplete"`,
			By: Webhook},
		{Name: "pod-replacement broken by an update", Update: true, Before: annotate(podreplacement.Annotation, podreplacement.TerminationComplete),
			Change: annotate(podreplacement.Annotation, "AfterTermination"),
			Field:  podReplacementField, Why: `Unsupported value: "AfterTermination"`, By: Webhook},
		{Name: "hooks that are not JSON", Change: annotate(hooks.Annotation, "pre: db-migrate"),
			Field: hooksField, Why: "must be a JSON object of pre, steps and post", By: Webhook},
		{Name: "hooks with an unknown point", Change: annotate(hooks.Annotation, `{"preStop":{"job":"x"}}`),
			Field: hooksField, Why: `unknown field "preStop"`, By: Webhook},
		{Name: "hooks with an unknown field", Change: annotate(hooks.Annotation, `{"pre":{"job":"m","timeout":"1m"}}`),
			Field: hooksField, Why: `unknown field "timeout"`, By: Webhook},
		{Name: "hooks naming no hook", Change: annotate(hooks.Annotation, `{}`),
			Field: hooksField, Why: "names no hook", By: Webhook},
		{Name: "hook job not a Job's name", Change: annotate(hooks.Annotation, `{"pre":{"job":"DB_Migrate"}}`),
			Field: hooksField, Why: `pre.job: "DB_Migrate" is not the name of a Job`, By: Webhook},
		{Name: "pre hook onFailure Report", Change: annotate(hooks.Annotation, `{"pre":{"job":"m","onFailure":"Report"}}`),
			Field: hooksField, Why: `pre.onFailure: "Report" is not supported: want Hold or Abort`, By: Webhook},
		{Name: "post hook onFailure Hold", Change: annotate(hooks.Annotation, `{"post":{"job":"m","onFailure":"Hold"}}`),
			Field: hooksField, Why: `post.onFailure: "Hold" is not supported: want Report or Abort`, By: Webhook},
		{Name: "hook step not a canary step", Change: annotate(hooks.Annotation, `{"steps":{"0":{"job":"smoke"}}}`),
			Field: hooksField, Why: `steps: "0" is not a canary step`, By: Webhook},
		{Name: "step hooks without canary steps", Change: annotate(hooks.Annotation, `{"steps":{"2":{"job":"smoke"}}}`),
			Field: hooksField, Why: "step hooks need " + appsv1beta1.CanaryStepsAnnotation, By: Webhook},
		{Name: "canary steps removed from an object with step hooks by an update", Update: true,
			Before: func(m *appsv1beta1.MyDeployment) {
				annotate(appsv1beta1.CanaryStepsAnnotation, "1, 100%")(m)
				annotate(hooks.Annotation, `{"steps":{"1":{"job":"smoke"}}}`)(m)
			},
			Change: func(m *appsv1beta1.MyDeployment) { delete(m.Annotations, appsv1beta1.CanaryStepsAnnotation) },
			Field:  hooksField, Why: "step hooks need " + appsv1beta1.CanaryStepsAnnotation, By: Webhook},
		{Name: "hook onFailure Abort with Recreate", Change: func(m *appsv1beta1.MyDeployment) {
			recreate(m)
			annotate(hooks.Annotation, `{"pre":{"job":"m","onFailure":"Abort"}}`)(m)
		}, Field: hooksField, Why: "onFailure Abort needs spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "hooks broken by an update", Update: true, Before: annotate(hooks.Annotation, `{"pre":{"job":"m"}}`),
			Change: annotate(hooks.Annotation, `{"pre":{"job":"m","onFailure":"Report"}}`),
			Field:  hooksField, Why: `pre.onFailure: "Report" is not supported`, By: Webhook},
		{Name: "rollout-on-config-change neither true nor false", Change: annotate(appsv1beta1.RolloutOnConfigChangeAnnotation, "yes"),
			Field: "metadata.annotations[" + appsv1beta1.RolloutOnConfigChangeAnnotation + "]", Why: `Unsupported value: "yes"`, By: Webhook},
		{Name: "rollout-on-config-change empty by an update", Update: true, Change: annotate(appsv1beta1.RolloutOnConfigChangeAnnotation, ""),
			Field: "metadata.annotations[" + appsv1beta1.RolloutOnConfigChangeAnnotation + "]", Why: `Unsupported value: ""`, By: Webhook},
		{Name: "update-mode unknown", Change: annotate(appsv1beta1.UpdateModeAnnotation, "InPlaceOnly"),
			Field: updateModeField, Why: `Unsupported value: "InPlaceOnly": supported values: "Recreate", "InPlaceIfPossible"`, By: Webhook},
		{Name: "update-mode empty", Change: annotate(appsv1beta1.UpdateModeAnnotation, ""),
			Field: updateModeField, Why: `Unsupported value: ""`, By: Webhook},
		{Name: "update-mode InPlaceIfPossible with Recreate", Change: func(m *appsv1beta1.MyDeployment) {
			recreate(m)
			annotate(appsv1beta1.UpdateModeAnnotation, appsv1beta1.UpdateModeInPlaceIfPossible)(m)
		}, Field: updateModeField, Why: "InPlaceIfPossible needs spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "strategy switched to Recreate while in place by an update", Update: true,
			Before: annotate(appsv1beta1.UpdateModeAnnotation, appsv1beta1.UpdateModeInPlaceIfPossible), Change: recreate,
			Field: updateModeField, Why: "InPlaceIfPossible needs spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "on-failure unknown", Change: annotate(appsv1beta1.OnFailureAnnotation, "Rollback"),
			Field: onFailureField, Why: `Unsupported value: "Rollback": supported values: "Continue", "Abort"`, By: Webhook},
		{Name: "on-failure Abort with Recreate", Change: func(m *appsv1beta1.MyDeployment) {
			recreate(m)
			annotate(appsv1beta1.OnFailureAnnotation, appsv1beta1.OnFailureAbort)(m)
		}, Field: onFailureField, Why: "Abort needs spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "strategy switched to Recreate while on-failure Abort by an update", Update: true,
			Before: annotate(appsv1beta1.OnFailureAnnotation, appsv1beta1.OnFailureAbort), Change: recreate,
			Field: onFailureField, Why: "Abort needs spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "retried-at not a time", Change: annotate(appsv1beta1.RetriedAtAnnotation, "yesterday"),
			Field: "metadata.annotations[" + appsv1beta1.RetriedAtAnnotation + "]", Why: "must be an RFC 3339 time", By: Webhook},

		{Name: "drain unknown", Change: annotate(appsv1beta1.DrainAnnotation, "Evict"),
			Field: drainField, Why: `Unsupported value: "Evict": supported values: "SurgeFirst"`, By: Webhook},
		{Name: "drain SurgeFirst with Recreate", Change: func(m *appsv1beta1.MyDeployment) {
			recreate(m)
			annotate(appsv1beta1.DrainAnnotation, appsv1beta1.DrainSurgeFirst)(m)
		}, Field: drainField, Why: "SurgeFirst needs spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "strategy switched to Recreate while drain SurgeFirst by an update", Update: true,
			Before: annotate(appsv1beta1.DrainAnnotation, appsv1beta1.DrainSurgeFirst), Change: recreate,
			Field: drainField, Why: "SurgeFirst needs spec.strategy.type RollingUpdate", By: Webhook},

		{Name: "waves with an invalid label key", Change: annotate(wavesKey, "not a key!"),
			Field: wavesField, Why: `key "not a key!" is not a node label key`, By: Webhook},
		{Name: "waves with a bad bake", Change: annotate(wavesKey, `{"key":"topology.kubernetes.io/zone","bake":"ten minutes"}`),
			Field: wavesField, Why: `bake "ten minutes" must be a non-negative duration`, By: Webhook},
		{Name: "waves with an order entry twice", Change: annotate(wavesKey, `{"key":"zone","order":["a","a"]}`),
			Field: wavesField, Why: `order[1] "a" is listed twice`, By: Webhook},
		{Name: "waves with an unknown field", Change: annotate(wavesKey, `{"key":"zone","bakes":"1m"}`),
			Field: wavesField, Why: `unknown field "bakes"`, By: Webhook},
		{Name: "waves with Recreate", Change: func(m *appsv1beta1.MyDeployment) {
			recreate(m)
			annotate(wavesKey, "topology.kubernetes.io/zone")(m)
		}, Field: wavesField, Why: "waves need spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "strategy switched to Recreate while waves by an update", Update: true,
			Before: annotate(wavesKey, "topology.kubernetes.io/zone"), Change: recreate,
			Field: wavesField, Why: "waves need spec.strategy.type RollingUpdate", By: Webhook},
		{Name: "wave record not the controller's", Change: func(m *appsv1beta1.MyDeployment) {
			annotate(wavesKey, "topology.kubernetes.io/zone")(m)
			annotate("apps.mydeployment.io/wave-state", "wave 2")(m)
		}, Field: "metadata.annotations[apps.mydeployment.io/wave-state]", Why: "not a wave record", By: Webhook},

		{Name: "adopt-from of another kind", Change: annotate(appsv1beta1.AdoptFromAnnotation, "StatefulSet/web"),
			Field: adoptFromField, Why: "must be Deployment/<name>", By: Webhook},
		{Name: "adopt-from without a name", Change: annotate(appsv1beta1.AdoptFromAnnotation, "Deployment/"),
			Field: adoptFromField, Why: "must be Deployment/<name>", By: Webhook},
		{Name: "adopt-from naming no valid object", Change: annotate(appsv1beta1.AdoptFromAnnotation, "Deployment/Web_1"),
			Field: adoptFromField, Why: "must be Deployment/<name>", By: Webhook},
		{Name: "adopt-from added by an update", Update: true, Change: annotate(appsv1beta1.AdoptFromAnnotation, "Deployment/web"),
			Field: adoptFromField, Why: "may only be set when the MyDeployment is created", By: Webhook},
		{Name: "adopt-from changed by an update", Update: true, Before: annotate(appsv1beta1.AdoptFromAnnotation, "Deployment/web"),
			Change: annotate(appsv1beta1.AdoptFromAnnotation, "Deployment/other"),
			Field:  adoptFromField, Why: "may only be set when the MyDeployment is created", By: Webhook},
		{Name: "adopt-revisions not JSON", Change: annotate(appsv1beta1.AdoptRevisionsAnnotation, "web-5d8f7c9b4"),
			Field: adoptRevsField, Why: "must be a JSON object of pod-template-hash values to revision names", By: Webhook},
		{Name: "adopt-revisions naming no valid revision", Change: annotate(appsv1beta1.AdoptRevisionsAnnotation, `{"7d9f8c6b5":"Web 1"}`),
			Field: adoptRevsField, Why: "must be a JSON object of pod-template-hash values to revision names", By: Webhook},

		// Names.
		{Name: "name longer than 253 characters", Change: func(m *appsv1beta1.MyDeployment) { m.Name = strings.Repeat("a", 254) },
			Field: "metadata.name", Why: "must be no more than 253 characters"},
		{Name: "name not a DNS subdomain", Change: func(m *appsv1beta1.MyDeployment) { m.Name = "Web_1" },
			Field: "metadata.name", Why: "a lowercase RFC 1123 subdomain"},

		// Pod template: the CRD's rules.
		{Name: "restartPolicy Never", Change: podSpec(func(s *corev1.PodSpec) { s.RestartPolicy = corev1.RestartPolicyNever }),
			Field: "spec.template.spec.restartPolicy", Why: `only "Always"`},
		{Name: "no containers", Change: podSpec(func(s *corev1.PodSpec) { s.Containers = nil }),
			Field: "spec.template.spec.containers", Why: "Required"},

		// Pod template: what only a Pod's validation knows (the webhook's dry run).
		{Name: "container name not a DNS label", Change: podSpec(func(s *corev1.PodSpec) { s.Containers[0].Name = "Web_1" }),
			Field: "spec.template.spec.containers[0].name", By: Webhook},
		{Name: "dnsPolicy None without dnsConfig", Change: podSpec(func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSNone }),
			Field: "spec.template.spec.dnsConfig", By: Webhook},
		{Name: "image with surrounding spaces", Change: podSpec(func(s *corev1.PodSpec) { s.Containers[0].Image = " nginx " }),
			Field: "spec.template.spec.containers[0].image", By: Webhook},
		{Name: "empty image", Change: podSpec(func(s *corev1.PodSpec) { s.Containers[0].Image = "" }),
			Field: "spec.template.spec.containers[0].image", Why: "Required", By: Webhook},
		{Name: "port out of range", Change: podSpec(func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}}
		}), Field: "spec.template.spec.containers[0].ports[0].containerPort", By: Webhook},
		{Name: "mount of a volume that does not exist", Change: podSpec(func(s *corev1.PodSpec) {
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}), Field: "spec.template.spec.containers[0].volumeMounts[0].name", By: Webhook},
		{Name: "requests above limits", Change: podSpec(func(s *corev1.PodSpec) {
			s.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}
		}), Field: "spec.template.spec.containers[0].resources.requests", By: Webhook},
		{Name: "invalid environment variable name", Change: podSpec(func(s *corev1.PodSpec) {
			s.Containers[0].Env = []corev1.EnvVar{{Name: "", Value: "x"}}
		}), Field: "spec.template.spec.containers[0].env[0].name", By: Webhook},
		{Name: "template label value with spaces", Change: func(m *appsv1beta1.MyDeployment) {
			m.Spec.Template.Labels["tier"] = "front end"
		}, Field: "spec.template.metadata.labels", Why: "Invalid value", By: Webhook},
		{Name: "duplicate container names", Change: podSpec(func(s *corev1.PodSpec) {
			s.Containers = append(s.Containers, s.Containers[0])
		}), Field: "spec.template.spec.containers[1]", Why: "Duplicate value"},
	}
}
