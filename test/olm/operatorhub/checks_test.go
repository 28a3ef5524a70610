package operatorhub

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/releases"
)

var (
	repoBundle   = filepath.Join("..", "..", "..", "bundle")
	repoReleases = filepath.Join("..", "..", "..", "catalog", "releases")
)

// editYAML rewrites the YAML file at path through edit.
func editYAML(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// submission is a bundle folder written by Write, to break.
type submission struct {
	t   *testing.T
	dir string
}

func (s submission) csv(edit func(spec, meta map[string]any)) {
	editYAML(s.t, filepath.Join(s.dir, "manifests", "mydeployment-operator.clusterserviceversion.yaml"), func(m map[string]any) {
		edit(m["spec"].(map[string]any), m["metadata"].(map[string]any))
	})
}

func (s submission) annotate(key, value string) {
	editYAML(s.t, filepath.Join(s.dir, "metadata", "annotations.yaml"), func(m map[string]any) {
		m["annotations"].(map[string]any)[key] = value
	})
}

// TestCheckFailsOnBrokenSubmissions feeds Check broken copies of the
// submission Write makes from bundle/: each must fail with its reason, and
// the unbroken copy must pass.
func TestCheckFailsOnBrokenSubmissions(t *testing.T) {
	_, bundleCSV, err := findCSV(filepath.Join(repoBundle, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	released, err := releases.Load(repoReleases)
	if err != nil {
		t.Fatal(err)
	}
	if len(released) < 2 {
		t.Fatalf("catalog/releases holds %d releases; the graph rows need two", len(released))
	}
	// cur is this bundle, newest the release it replaces, oldest the first release.
	cur, version := bundleCSV.Name, bundleCSV.Spec.Version.String()
	newest, oldest := released[len(released)-1].Name, released[0].Name
	cases := []struct {
		name   string
		break_ func(s submission)
		want   string // a substring of one error; empty: no error at all
	}{
		{name: "as written", break_: func(submission) {}},
		{name: "icon removed", want: "CSV has 0 icons, want one",
			break_: func(s submission) { s.csv(func(spec, _ map[string]any) { delete(spec, "icon") }) }},
		{name: "icon without mediatype", want: `CSV icon mediatype "" is not one of`,
			break_: func(s submission) {
				s.csv(func(spec, _ map[string]any) { delete(spec["icon"].([]any)[0].(map[string]any), "mediatype") })
			}},
		{name: "maintainers removed", want: "CSV has no maintainers",
			break_: func(s submission) { s.csv(func(spec, _ map[string]any) { delete(spec, "maintainers") }) }},
		{name: "maintainer without email", want: "has no valid email",
			break_: func(s submission) {
				s.csv(func(spec, _ map[string]any) { delete(spec["maintainers"].([]any)[0].(map[string]any), "email") })
			}},
		{name: "displayName too short", want: `CSV displayName "MD" has 2 characters, want 3 to 50`,
			break_: func(s submission) { s.csv(func(spec, _ map[string]any) { spec["displayName"] = "MD" }) }},
		{name: "displayName too long", want: "has 51 characters, want 3 to 50",
			break_: func(s submission) {
				s.csv(func(spec, _ map[string]any) { spec["displayName"] = strings.Repeat("M", 51) })
			}},
		{name: "description too short", want: "CSV description has 10 characters, want at least 20",
			break_: func(s submission) { s.csv(func(spec, _ map[string]any) { spec["description"] = "Pods, fast" }) }},
		{name: "provider name too short", want: `CSV provider name "md" has 2 characters, want at least 3`,
			break_: func(s submission) {
				s.csv(func(spec, _ map[string]any) { spec["provider"] = map[string]any{"name": "md"} })
			}},
		{name: "links removed", want: "CSV has no links",
			break_: func(s submission) { s.csv(func(spec, _ map[string]any) { delete(spec, "links") }) }},
		{name: "version not semver", want: `CSV spec.version "0.2" is not a semver version`,
			break_: func(s submission) { s.csv(func(spec, _ map[string]any) { spec["version"] = "0.2" }) }},
		{name: "CSV name without the package", want: fmt.Sprintf(`CSV name "mydeployment.v%[1]s" is not "mydeployment-operator.v%[1]s"`, version),
			break_: func(s submission) {
				s.csv(func(_, meta map[string]any) { meta["name"] = "mydeployment.v" + version })
			}},
		{name: "package annotation not the folder", want: `annotation operators.operatorframework.io.bundle.package.v1 is "mydeployment", the package folder is "mydeployment-operator"`,
			break_: func(s submission) { s.annotate(PackageAnnotation, "mydeployment") }},
		{name: "NetworkPolicy shipped", want: "the bundle ships NetworkPolicy deny-all",
			break_: func(s submission) {
				np := "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: deny-all\nspec:\n  podSelector: {}\n"
				if err := os.WriteFile(filepath.Join(s.dir, "manifests", "deny-all.yaml"), []byte(np), 0o644); err != nil {
					s.t.Fatal(err)
				}
			}},
		{name: "replaces a bundle that was never released: a dangling edge",
			want: "update graph: " + cur + " replaces or skips mydeployment-operator.v0.1.5, which is not a bundle of the package",
			break_: func(s submission) {
				s.csv(func(spec, _ map[string]any) { spec["replaces"] = "mydeployment-operator.v0.1.5" })
			}},
		{name: "skips a bundle that was never released: a dangling edge",
			want: "update graph: " + cur + " replaces or skips mydeployment-operator.v0.1.5, which is not a bundle of the package",
			break_: func(s submission) {
				s.csv(func(spec, _ map[string]any) { spec["skips"] = []any{"mydeployment-operator.v0.1.5"} })
			}},
		{name: "replaces nothing: the newest release dangling", want: "update graph: " + newest + " is dangling",
			break_: func(s submission) { s.csv(func(spec, _ map[string]any) { delete(spec, "replaces") }) }},
		{name: "replaces the first release, not the newest: the newest dangling", want: "update graph: " + newest + " is dangling",
			break_: func(s submission) { s.csv(func(spec, _ map[string]any) { spec["replaces"] = oldest }) }},
		{name: "skips the newest release instead of replacing it", break_: func(s submission) {
			s.csv(func(spec, _ map[string]any) {
				delete(spec, "replaces")
				spec["skips"] = []any{newest}
			})
		}},
		{name: "OpenShift older than minKubeVersion", want: `minKubeVersion 1.33.0 is above Kubernetes 1.25 of OpenShift 4.12, the oldest com.redhat.openshift.versions="v4.12-v4.20" targets`,
			break_: func(s submission) { s.annotate(OpenShiftVersionsAnnotation, "v4.12-v4.20") }},
		{name: "OpenShift list with an old version", want: "above Kubernetes 1.29 of OpenShift 4.16",
			break_: func(s submission) { s.annotate(OpenShiftVersionsAnnotation, "v4.18,v4.16") }},
		{name: "OpenShift range from minKubeVersion's release", break_: func(s submission) { s.annotate(OpenShiftVersionsAnnotation, "v4.20-v4.21") }}, // 4.20 ships Kubernetes 1.33
		{name: "OpenShift annotation not a version", want: `"4.x" is not a version`,
			break_: func(s submission) { s.annotate(OpenShiftVersionsAnnotation, "4.x") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own copy
			written, err := Write(Options{BundleDir: repoBundle, ReleasesDir: repoReleases, OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			tc.break_(submission{t: t, dir: written.BundleDir})
			_, errs := Check(written.BundleDir, repoReleases)
			if tc.want == "" {
				for _, e := range errs {
					t.Errorf("unexpected: %v", e)
				}
				return
			}
			for _, e := range errs {
				if strings.Contains(e.Error(), tc.want) {
					return
				}
			}
			t.Errorf("no error contains %q; got %v", tc.want, errs)
		})
	}
}
