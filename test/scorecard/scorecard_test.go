package scorecard

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apimanifests "github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// committed is bundle/, read once.
var committed = sync.OnceValues(func() (*apimanifests.Bundle, error) {
	return apimanifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
})

// loadBundle returns the committed bundle/ with a CSV of its own for the
// caller to break (the CRDs are shared: callers must not modify them).
func loadBundle(t *testing.T) *apimanifests.Bundle {
	t.Helper()
	b, err := committed()
	if err != nil {
		t.Fatalf("reading bundle/: %v", err)
	}
	cp := *b
	cp.CSV = b.CSV.DeepCopy()
	return &cp
}

// TestBundlePasses: the committed bundle passes every test, as
// `make scorecard-local` requires, and says what it checked.
func TestBundlePasses(t *testing.T) {
	for _, name := range Names() {
		r := Run(name, loadBundle(t)).Results
		if len(r) != 1 || r[0].State != scapiv1alpha3.PassState || r[0].Name != name {
			t.Fatalf("%s: want one pass result, got %+v", name, r)
		}
		if r[0].Log == "" {
			t.Errorf("%s: no log of what was checked", name)
		}
		t.Logf("%s: %s", name, r[0].Log)
	}
}

func TestRunUnknownTestIsError(t *testing.T) {
	r := Run("no-such-test", loadBundle(t)).Results[0]
	if r.State != scapiv1alpha3.ErrorState || !strings.Contains(r.Errors[0], ExamplesRollOutTest) {
		t.Fatalf("want an error listing the known tests, got %+v", r)
	}
}

// withExamples replaces the CSV's alm-examples with the first committed
// MyDeployment example changed by edit (a JSON object as maps), plus extra raw examples.
func withExamples(t *testing.T, edit func(ex map[string]any), extra ...string) *apimanifests.Bundle {
	t.Helper()
	b := loadBundle(t)
	var examples []map[string]any
	if err := json.Unmarshal([]byte(b.CSV.Annotations[almExamples]), &examples); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(examples, func(ex map[string]any) bool { return ex["kind"] == "MyDeployment" })
	if i < 0 {
		t.Fatal("no MyDeployment among the CSV's alm-examples")
	}
	ex := examples[i]
	edit(ex)
	out, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	b.CSV.Annotations[almExamples] = "[" + strings.Join(append([]string{string(out)}, extra...), ",") + "]"
	return b
}

func spec(ex map[string]any) map[string]any { return ex["spec"].(map[string]any) }

func TestExamplesRollOutFindsBrokenExamples(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(ex map[string]any)
		extra []string
		want  string
	}{
		{"typo in a spec field", func(ex map[string]any) { spec(ex)["replica"] = 3 },
			nil, `unknown field "spec.replica"`},
		{"typo deep in the template", func(ex map[string]any) {
			c := spec(ex)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			c["imagePullPolice"] = "Always"
		}, nil, `unknown field "spec.template.spec.containers[0].imagePullPolice"`},
		{"wrong case", func(ex map[string]any) { spec(ex)["Replicas"] = 3 },
			nil, `unknown field "spec.Replicas"`},
		{"selector misses the template", func(ex map[string]any) {
			spec(ex)["selector"] = map[string]any{"matchLabels": map[string]any{"app": "api"}}
		}, nil, "does not match spec.template.metadata.labels"},
		{"empty selector", func(ex map[string]any) { spec(ex)["selector"] = map[string]any{} },
			nil, "spec.selector is empty"},
		{"no selector", func(ex map[string]any) { delete(spec(ex), "selector") },
			nil, "spec.selector is missing"},
		{"zero replicas", func(ex map[string]any) { spec(ex)["replicas"] = 0 },
			nil, "spec.replicas is 0"},
		{"paused", func(ex map[string]any) { spec(ex)["paused"] = true },
			nil, "spec.paused is true"},
		{"unresolvable maxUnavailable", func(ex map[string]any) {
			spec(ex)["strategy"] = map[string]any{"type": "RollingUpdate",
				"rollingUpdate": map[string]any{"maxUnavailable": "150%"}}
		}, nil, "must not be greater than 100%"},
		{"a second, broken example is checked too", func(map[string]any) {},
			[]string{`{"apiVersion":"apps.mydeployment.io/v1beta1","kind":"MyDeployment","metadata":{"name":"b"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"c"}}}}}`},
			"alm-examples[1] (MyDeployment b): spec.selector"},
		{"only other kinds", func(ex map[string]any) { ex["kind"] = "Deployment"; ex["apiVersion"] = "apps/v1" },
			nil, "alm-examples holds no apps.mydeployment.io/v1beta1 MyDeployment"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := CheckExamplesRollOut(withExamples(t, tc.edit, tc.extra...))
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Fatalf("want an error containing %q, got %q", tc.want, errs)
			}
			r := Run(ExamplesRollOutTest, withExamples(t, tc.edit, tc.extra...)).Results[0]
			if r.State != scapiv1alpha3.FailState {
				t.Fatalf("want state fail, got %s", r.State)
			}
		})
	}
}

// withExample returns the committed bundle with its kind example changed by
// edit, every other example kept.
func withExample(t *testing.T, kind string, edit func(ex map[string]any)) *apimanifests.Bundle {
	t.Helper()
	b := loadBundle(t)
	var examples []map[string]any
	if err := json.Unmarshal([]byte(b.CSV.Annotations[almExamples]), &examples); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(examples, func(ex map[string]any) bool { return ex["kind"] == kind })
	if i < 0 {
		t.Fatalf("no %s among the CSV's alm-examples", kind)
	}
	edit(examples[i])
	out, err := json.Marshal(examples)
	if err != nil {
		t.Fatal(err)
	}
	b.CSV.Annotations[almExamples] = string(out)
	return b
}

// fullForm rewrites an Application example's five-line deployment (image,
// replicas, port) as the full form it expands to, so a case can edit the
// template.
func fullForm(ex map[string]any) {
	d := spec(ex)["deployment"].(map[string]any)
	if _, full := d["template"]; full {
		return
	}
	labels := map[string]any{"app": "application-sample"}
	spec(ex)["deployment"] = map[string]any{
		"replicas": d["replicas"],
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{
			"containers": []any{map[string]any{"name": "application-sample", "image": d["image"],
				"ports": []any{map[string]any{"name": "http", "containerPort": d["port"]}}}}}},
	}
}

func TestExamplesRollOutChecksTheApplication(t *testing.T) {
	deployment := func(ex map[string]any) map[string]any { fullForm(ex); return spec(ex)["deployment"].(map[string]any) }
	container := func(ex map[string]any) map[string]any {
		return deployment(ex)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	}
	cases := []struct {
		name string
		edit func(ex map[string]any)
		want string
	}{
		{"typo deep in the deployment", func(ex map[string]any) { container(ex)["imagePullPolice"] = "Always" },
			`(Application application-sample): field the API would drop or reject: unknown field "spec.deployment.template.spec.containers[0].imagePullPolice"`},
		{"typo in the service", func(ex map[string]any) { spec(ex)["service"] = map[string]any{"tpye": "NodePort"} },
			`unknown field "spec.service.tpye"`},
		{"selector misses the template", func(ex map[string]any) {
			deployment(ex)["selector"] = map[string]any{"matchLabels": map[string]any{"app": "api"}}
			deployment(ex)["template"].(map[string]any)["metadata"] = map[string]any{"labels": map[string]any{"app": "web"}}
		}, "does not match spec.template.metadata.labels"},
		{"zero replicas", func(ex map[string]any) { deployment(ex)["replicas"] = 0 }, "spec.replicas is 0"},
		{"a Service with no port to default from", func(ex map[string]any) { delete(container(ex), "ports") },
			"spec.service has no ports and no container declares one"},
		{"no Application example", func(ex map[string]any) { clear(ex); ex["kind"] = "ConfigMap"; ex["apiVersion"] = "v1" },
			"alm-examples holds no apps.mydeployment.io/v1beta1 Application"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Run(ExamplesRollOutTest, withExample(t, "Application", tc.edit)).Results[0]
			if r.State != scapiv1alpha3.FailState || !strings.Contains(strings.Join(r.Errors, "\n"), tc.want) {
				t.Fatalf("want state fail with an error containing %q, got %s %q", tc.want, r.State, r.Errors)
			}
		})
	}

	t.Run("the committed one rolls out its defaulted MyDeployment", func(t *testing.T) {
		errs, log := CheckExamplesRollOut(withExample(t, "Application", func(map[string]any) {}))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if !slices.ContainsFunc(log, func(l string) bool { return strings.Contains(l, "(Application application-sample): ") }) {
			t.Fatalf("the Application example was not simulated: %q", log)
		}
	})
	t.Run("a headless Service needs no port", func(t *testing.T) {
		errs, _ := CheckExamplesRollOut(withExample(t, "Application", func(ex map[string]any) {
			delete(container(ex), "ports")
			spec(ex)["service"] = map[string]any{"clusterIP": "None"}
		}))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
	})
}

func TestExamplesRollOutWithoutAnnotation(t *testing.T) {
	b := loadBundle(t)
	delete(b.CSV.Annotations, almExamples)
	if errs, _ := CheckExamplesRollOut(b); len(errs) != 1 || !strings.Contains(errs[0], "no alm-examples") {
		t.Fatalf("got %q", errs)
	}
}

func mdWith(replicas int32, strategy string, surge, unavailable any, minReady int32) *appsv1beta1.MyDeployment {
	md := &appsv1beta1.MyDeployment{}
	md.Spec.Replicas = ptr.To(replicas)
	md.Spec.MinReadySeconds = minReady
	raw, _ := json.Marshal(map[string]any{"type": strategy})
	if strategy == "RollingUpdate" && (surge != nil || unavailable != nil) {
		ru := map[string]any{}
		if surge != nil {
			ru["maxSurge"] = surge
		}
		if unavailable != nil {
			ru["maxUnavailable"] = unavailable
		}
		raw, _ = json.Marshal(map[string]any{"type": strategy, "rollingUpdate": ru})
	}
	if err := json.Unmarshal(raw, &md.Spec.Strategy); err != nil {
		panic(err)
	}
	return md
}

func withAnnotations(md *appsv1beta1.MyDeployment, annotations map[string]string) *appsv1beta1.MyDeployment {
	md.Annotations = annotations
	return md
}

// TestSimulateRolloutWithTheRealPlanner: the summary's figures are what the
// strategy allows (peak = replicas+maxSurge, floor = replicas-maxUnavailable).
func TestSimulateRolloutWithTheRealPlanner(t *testing.T) {
	cases := []struct {
		name string
		md   *appsv1beta1.MyDeployment
		want string
	}{
		{"surge 1, unavailable 0", mdWith(3, "RollingUpdate", 1, 0, 0),
			"peak 4 pods, at least 3 available"},
		{"defaults 25%/25% of 10", mdWith(10, "RollingUpdate", nil, nil, 0),
			"RollingUpdate maxSurge=3 maxUnavailable=2, minReadySeconds=0: all available from 0 pods in 1 reconcile(s) (peak 10 pods); new template rolled out in"},
		{"surge 0, unavailable 1", mdWith(4, "RollingUpdate", 0, 1, 0), "peak 4 pods, at least 3 available"},
		{"percent, with minReadySeconds", mdWith(5, "RollingUpdate", "50%", "20%", 30),
			"maxSurge=3 maxUnavailable=1, minReadySeconds=30"},
		{"Recreate", mdWith(3, "Recreate", nil, nil, 0), "peak 3 pods, at least 0 available"},
		{"one replica", mdWith(1, "RollingUpdate", nil, nil, 0), "peak 2 pods, at least 1 available"},
		{"a canary at partition 80% with respect-pdb", withAnnotations(mdWith(10, "RollingUpdate", nil, nil, 0), map[string]string{
			appsv1beta1.PartitionAnnotation: "80%", appsv1beta1.RespectPDBAnnotation: "true"}), "held at 2 of 10 updated (partition 8)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			summary, problems := simulateRollout(tc.md, rollout.Compute)
			if problems != nil {
				t.Fatalf("problems: %q", problems)
			}
			if !strings.Contains(summary, tc.want) {
				t.Fatalf("summary %q lacks %q", summary, tc.want)
			}
		})
	}
}

// TestSimulateRolloutCatchesABrokenPlanner: the invariants are checked, not
// assumed, by feeding planners that break each promise.
func TestSimulateRolloutCatchesABrokenPlanner(t *testing.T) {
	md := mdWith(4, "RollingUpdate", 1, 1, 0)
	cases := []struct {
		name string
		plan func(rollout.Input) rollout.Plan
		want string
	}{
		{"surges too far", func(in rollout.Input) rollout.Plan {
			p := rollout.Compute(in)
			if len(p.Create) > 0 {
				p.Create[0].Count += 2
			}
			return p
		}, "more than replicas+maxSurge=5"},
		{"never creates", func(rollout.Input) rollout.Plan { return rollout.Plan{} },
			"not converged to 4 available pods"},
		{"deletes every available old pod at once", func(in rollout.Input) rollout.Plan {
			p := rollout.Compute(in)
			var old []*corev1.Pod
			for _, pod := range in.Pods {
				if pod.DeletionTimestamp == nil && pod.Labels["controller-revision-hash"] != in.UpdateRevision {
					old = append(old, pod)
				}
			}
			if len(old) > 0 {
				p.Delete = old
			}
			return p
		}, "below replicas-maxUnavailable=3"},
		{"deletes a pod twice", func(in rollout.Input) rollout.Plan {
			p := rollout.Compute(in)
			if len(p.Delete) > 0 {
				p.Delete = append(p.Delete, p.Delete[0])
			}
			return p
		}, "which is not an active pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := simulateRollout(md, tc.plan)
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Fatalf("want a problem containing %q, got %q", tc.want, problems)
			}
		})
	}

	recreate := mdWith(3, "Recreate", nil, nil, 0)
	_, problems := simulateRollout(recreate, func(in rollout.Input) rollout.Plan {
		in.Strategy = rollout.RollingUpdate // plans a rolling update instead
		return rollout.Compute(in)
	})
	if !strings.Contains(strings.Join(problems, "\n"), "Recreate runs new pods while old ones still exist") {
		t.Fatalf("Recreate overlap not caught: %q", problems)
	}
}

func TestDescriptorsInSchemaFindsBadPaths(t *testing.T) {
	cases := []struct {
		name       string
		spec, stat string
		want       string // "" means no error
	}{
		{"nested field", "strategy.rollingUpdate.maxSurge", "", ""},
		{"array element", "template.spec.containers[0].image", "conditions[0].reason", ""},
		{"map value", "selector.matchLabels.app", "", ""},
		{"misspelt spec field", "replica", "", `spec descriptor "replica": spec has no field "replica"`},
		{"misspelt status field", "", "availableReplica", `status descriptor "availableReplica": status has no field "availableReplica"`},
		{"wrong nesting", "strategy.maxSurge", "", `spec.strategy has no field "maxSurge"`},
		{"index on a non-array", "replicas[0]", "", "spec.replicas is not an array"},
		{"not a path", "template..spec", "", "is not a field name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := loadBundle(t)
			owned := ownedMyDeployment(t, b)
			if tc.spec != "" {
				owned.SpecDescriptors[0].Path = tc.spec
			}
			if tc.stat != "" {
				owned.StatusDescriptors[0].Path = tc.stat
			}
			errs, _ := CheckDescriptorsInSchema(b)
			got := strings.Join(errs, "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("want %q, got %q", tc.want, got)
			}
		})
	}
}

func TestDescriptorsInSchemaFindsMissingCRD(t *testing.T) {
	b := loadBundle(t)
	ownedMyDeployment(t, b).Version = "v9"
	if errs, _ := CheckDescriptorsInSchema(b); len(errs) != 1 || !strings.Contains(errs[0], "no such version") {
		t.Fatalf("got %q", errs)
	}
	b.V1CRDs = nil
	errs, _ := CheckDescriptorsInSchema(b)
	if owned := len(b.CSV.Spec.CustomResourceDefinitions.Owned); len(errs) != owned {
		t.Fatalf("want one error per owned CRD (%d), got %q", owned, errs)
	}
	for _, e := range errs {
		if !strings.Contains(e, "no such CRD") {
			t.Fatalf("got %q", errs)
		}
	}
}

// ownedMyDeployment is the CSV's owned-CRD entry of MyDeployment.
func ownedMyDeployment(t *testing.T, b *apimanifests.Bundle) *v1alpha1.CRDDescription {
	t.Helper()
	owned := b.CSV.Spec.CustomResourceDefinitions.Owned
	i := slices.IndexFunc(owned, func(d v1alpha1.CRDDescription) bool { return d.Kind == "MyDeployment" })
	if i < 0 {
		t.Fatal("the CSV owns no MyDeployment CRD")
	}
	return &owned[i]
}
