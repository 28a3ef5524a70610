package olm

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// apiUse is an API resource the manager uses, and the first Kubernetes minor
// version in which it is served by default (GA or beta on by default). A
// resource of a CRD that is not Kubernetes' own has no version: the
// operator works without it (the Gateway API's HTTPRoute) or brings it (its
// own kinds).
type apiUse struct {
	group, version, resource string
	since                    string // "1.33"; "" for a CRD
	why                      string
}

// apiUses are the resources the manager touches: what its RBAC grants
// (config/rbac: the manager's roles, leader election, the metrics
// endpoint's reviews, the Node reader) and what its code imports
// (k8s.io/api/<group>/<version>), with the version the code uses. Kubernetes
// versions from the API's own changelog (kubernetes/kubernetes CHANGELOG,
// the "deprecated API migration guide" and the feature gates' pages).
var apiUses = []apiUse{
	{"", "v1", "pods", "1.0", ""},
	{"", "v1", "pods/status", "1.0", "readiness gate of in-place updates"},
	{"", "v1", "pods/eviction", "1.22", "policy/v1 Eviction (respect-pdb)"},
	{"", "v1", "pods/resize", "1.33", "in-place resize (InPlacePodVerticalScaling beta, on by default; the subresource is new in 1.33)"},
	{"", "v1", "services", "1.0", "Application"},
	{"", "v1", "configmaps", "1.2", "rollout-on-config-change"},
	{"", "v1", "secrets", "1.0", "rollout-on-config-change; the self-managed webhook certificate"},
	{"", "v1", "nodes", "1.0", "drain SurgeFirst"},
	{"", "v1", "events", "1.0", "leader election's events"},
	{"apps", "v1", "controllerrevisions", "1.9", ""},
	{"apps", "v1", "deployments", "1.9", "adopt-from: the Deployment a migration hands over"},
	{"apps", "v1", "replicasets", "1.9", "adopt-from: that Deployment's ReplicaSets"},
	{"autoscaling", "v2", "horizontalpodautoscalers", "1.23", "Application"},
	{"batch", "v1", "jobs", "1.24", "hooks: Jobs made from a suspended template Job (spec.suspend GA in 1.24)"},
	{"discovery.k8s.io", "v1", "endpointslices", "1.21", "Application's ready endpoints"},
	{"events.k8s.io", "v1", "events", "1.19", "controller-runtime's event recorder"},
	{"networking.k8s.io", "v1", "ingresses", "1.19", "Application"},
	{"policy", "v1", "poddisruptionbudgets", "1.21", "Application"},
	{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "1.16", "the self-managed certificate's caBundle"},
	{"coordination.k8s.io", "v1", "leases", "1.14", "leader election"},
	{"authentication.k8s.io", "v1", "tokenreviews", "1.6", "/metrics authentication"},
	{"authorization.k8s.io", "v1", "subjectaccessreviews", "1.6", "/metrics authorization"},
	{"authorization.k8s.io", "v1", "selfsubjectaccessreviews", "1.6", "may the manager read Nodes, ConfigMaps and Secrets (any user may ask)"},
	{"apps.mydeployment.io", "v1beta1", "*", "", "the operator's own CRDs"},
	{"gateway.networking.k8s.io", "v1", "httproutes", "", "Gateway API CRDs, optional: watched once served"},
}

// managerRoles are the files of config/rbac whose rules the manager is bound to.
var managerRoles = []string{"role.yaml", "leader_election_role.yaml", "node_reader_role.yaml", "metrics_auth_role.yaml"}

// groupOfPackage maps k8s.io/api/<dir> to the API group it holds.
var groupOfPackage = map[string]string{
	"core": "", "apps": "apps", "autoscaling": "autoscaling", "batch": "batch", "policy": "policy",
	"discovery": "discovery.k8s.io", "networking": "networking.k8s.io", "events": "events.k8s.io",
	"coordination": "coordination.k8s.io", "admissionregistration": "admissionregistration.k8s.io",
	"authentication": "authentication.k8s.io", "authorization": "authorization.k8s.io",
}

// rbacResources are the group/resource pairs the manager's RBAC grants.
func rbacResources(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range managerRoles {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", f))
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(b)), 4096)
		for {
			var role rbacv1.ClusterRole // a Role's rules read the same
			if err := dec.Decode(&role); err != nil {
				break
			}
			for _, r := range role.Rules {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						out[g+"/"+res] = true
					}
				}
			}
		}
	}
	if len(out) < 15 {
		t.Fatalf("read only %d resources from config/rbac %v: has the layout changed?", len(out), managerRoles)
	}
	return out
}

// importedGroupVersions are the group/version of every k8s.io/api and
// gateway-api package the manager's code (cmd/, internal/, api/; no tests)
// imports.
func importedGroupVersions(t *testing.T) map[string]string {
	t.Helper()
	k8sAPI := regexp.MustCompile(`^k8s\.io/api/([a-z0-9]+)/(v[0-9a-z]+)$`)
	gateway := regexp.MustCompile(`^sigs\.k8s\.io/gateway-api/apis/(v[0-9a-z]+)$`)
	out := map[string]string{} // group/version: a file importing it
	for _, dir := range []string{"cmd", "internal", "api"} {
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if m := k8sAPI.FindStringSubmatch(p); m != nil {
					g, ok := groupOfPackage[m[1]]
					if !ok {
						t.Errorf("%s imports %s: add its API group to groupOfPackage", path, p)
					}
					out[g+"/"+m[2]] = path
				} else if m := gateway.FindStringSubmatch(p); m != nil {
					out["gateway.networking.k8s.io/"+m[1]] = path
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestMinKubeVersionIsWhatTheManagerUses: every API resource the manager's
// RBAC grants and every API version its code imports is in apiUses, every
// row of apiUses is still used, and the CSV's minKubeVersion is the newest
// Kubernetes version among them: a new API the manager starts to use either
// raises minKubeVersion or fails here, never silently.
func TestMinKubeVersionIsWhatTheManagerUses(t *testing.T) {
	rows := map[string]apiUse{}
	groupVersions := map[string]bool{}
	for _, u := range apiUses {
		rows[u.group+"/"+u.resource] = u
		groupVersions[u.group+"/"+u.version] = true
	}
	granted := rbacResources(t)
	for gr := range granted {
		group, _, _ := strings.Cut(gr, "/")
		if _, ok := rows[gr]; !ok {
			if _, own := rows[group+"/*"]; !own {
				t.Errorf("the manager's RBAC grants %s: add it to apiUses with the Kubernetes version it appeared in", gr)
			}
		}
	}
	imported := importedGroupVersions(t)
	for gv, file := range imported {
		if !groupVersions[gv] {
			t.Errorf("%s imports API %s: add the resources it uses to apiUses with the Kubernetes version they appeared in", file, gv)
		}
	}
	newest := semver.MustParse("1.0.0")
	var needs []string
	for _, u := range apiUses {
		gr, gv := u.group+"/"+u.resource, u.group+"/"+u.version
		used := granted[gr] || imported[gv] != ""
		for g := range granted {
			used = used || (u.resource == "*" && strings.HasPrefix(g, u.group+"/"))
		}
		if !used {
			t.Errorf("apiUses lists %s %s, which neither the manager's RBAC nor its code uses: remove it", gv, u.resource)
		}
		if u.since == "" {
			continue
		}
		v := semver.MustParse(u.since + ".0")
		if v.GT(newest) {
			newest, needs = v, nil
		}
		if v.EQ(newest) {
			needs = append(needs, gv+" "+u.resource)
		}
	}
	sort.Strings(needs)
	for _, dir := range []string{filepath.Join("config", "manifests", "bases"), filepath.Join("bundle", "manifests")} {
		csv := readCSV(t, filepath.Join("..", "..", dir))
		if got := csv.Spec.MinKubeVersion; got != newest.String() {
			t.Errorf("%s: minKubeVersion %q, want %s: the newest Kubernetes the manager needs (%s)",
				dir, got, newest, strings.Join(needs, ", "))
		}
	}
}

// readCSV reads the one ClusterServiceVersion in dir.
func readCSV(t *testing.T, dir string) *v1alpha1.ClusterServiceVersion {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.clusterserviceversion.yaml"))
	if err != nil || len(files) != 1 {
		t.Fatalf("want one CSV in %s, found %v (%v)", dir, files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var csv v1alpha1.ClusterServiceVersion
	if err := yaml.Unmarshal(b, &csv); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	return &csv
}
