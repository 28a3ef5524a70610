package olm

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// ruleStrings lists sa's rules as "groups resources verbs", each list
// comma-joined, verbs sorted, the core group as "".
func ruleStrings(perms []v1alpha1.StrategyDeploymentPermissions, sa string) []string {
	var out []string
	for _, p := range perms {
		if p.ServiceAccountName != sa {
			continue
		}
		for _, r := range p.Rules {
			groups := slices.Clone(r.APIGroups)
			for i, g := range groups {
				if g == "" {
					groups[i] = `""`
				}
			}
			verbs := slices.Sorted(slices.Values(r.Verbs))
			res := append(slices.Clone(r.Resources), r.NonResourceURLs...)
			out = append(out, strings.Join(groups, ",")+" "+strings.Join(res, ",")+" "+strings.Join(verbs, ","))
		}
	}
	slices.Sort(out)
	return out
}

// TestBundlePermissionsFollowTheInstallMode checks the least privilege the
// CSV asks for. OLM grants `permissions` in the OperatorGroup's target
// namespaces only (and the operator's own), turning them into cluster-wide
// grants itself for AllNamespaces; `clusterPermissions` are granted
// cluster-wide whatever the install mode. So everything the manager does to
// namespaced objects (pods, revisions, MyDeployments, events, its lease) is
// in `permissions`, and `clusterPermissions` only holds what has no
// namespace: the metrics endpoint's token and access reviews, and Nodes
// (read for drain SurgeFirst). The lists are
// exact: a verb the manager does not use (update on
// mydeployments, get or update on mydeployments/status) fails it, as does a
// rule added anywhere. The OperatorCondition is not asked for: OLM grants
// access to the operator's own.
func TestBundlePermissionsFollowTheInstallMode(t *testing.T) {
	bundle, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatalf("reading bundle/: %v", err)
	}
	spec := bundle.CSV.Spec.InstallStrategy.StrategySpec
	if len(spec.DeploymentSpecs) != 1 {
		t.Fatalf("want one deployment in the install strategy, got %d", len(spec.DeploymentSpecs))
	}
	sa := spec.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName
	for _, c := range []struct {
		field string
		perms []v1alpha1.StrategyDeploymentPermissions
		want  []string
	}{{
		field: "permissions",
		perms: spec.Permissions,
		want: []string{
			// The reconcilers (config/rbac/role.yaml, from the RBAC markers):
			// MyDeployment's pods (evicted under respect-pdb; their in-place
			// readiness gate and resize under update-mode InPlaceIfPossible)
			// and revisions;
			// Application's children (MyDeployments it creates, Services,
			// Ingresses, HTTPRoutes, HorizontalPodAutoscalers,
			// PodDisruptionBudgets) and
			// the EndpointSlices it reads; ConfigMaps and Secrets, watched as
			// metadata and read to hash their data (rollout-on-config-change).
			`"" configmaps,secrets get,list,watch`,
			`"" pods,services create,delete,get,list,patch,watch`,
			`"" pods/eviction create`,
			`"" pods/resize,pods/status patch`,
			"apps controllerrevisions create,delete,get,list,patch,watch",
			// Read around the cache while a MyDeployment takes over a
			// Deployment's pods (adopt-from): never watched.
			"apps deployments get",
			"apps replicasets list",
			"apps.mydeployment.io applications get,list,watch",
			"apps.mydeployment.io mydeployments create,get,list,patch,watch",
			"apps.mydeployment.io applications/finalizers,mydeployments/finalizers update",
			"apps.mydeployment.io applications/status,mydeployments/status patch",
			"discovery.k8s.io endpointslices get,list,watch",
			"networking.k8s.io ingresses create,delete,get,list,patch,watch",
			"autoscaling horizontalpodautoscalers create,delete,get,list,patch,watch",
			"policy poddisruptionbudgets create,delete,get,list,patch,watch",
			"gateway.networking.k8s.io httproutes create,delete,get,list,patch,watch",
			// The hooks' Jobs (apps.mydeployment.io/hooks), made from a
			// suspended template Job read around the cache.
			"batch jobs create,delete,get,list,watch",
			"events.k8s.io events create,patch",
			// Leader election: the lease and its events (core events).
			"coordination.k8s.io leases create,delete,get,list,patch,update,watch",
			`"" events create,patch`,
		},
	}, {
		field: "clusterPermissions",
		perms: spec.ClusterPermissions,
		want: []string{
			"authentication.k8s.io tokenreviews create",
			"authorization.k8s.io subjectaccessreviews create",
			// Nodes, cluster-scoped, for drain SurgeFirst
			// (config/rbac/node_reader_role.yaml).
			`"" nodes get,list,watch`,
		},
	}} {
		for _, p := range c.perms {
			if p.ServiceAccountName != sa {
				t.Errorf("%s names service account %q, not the deployment's %q", c.field, p.ServiceAccountName, sa)
			}
		}
		want := slices.Sorted(slices.Values(c.want))
		got := ruleStrings(c.perms, sa)
		for _, r := range got {
			if !slices.Contains(want, r) {
				t.Errorf("%s has a rule it should not: %s", c.field, r)
			}
		}
		for _, r := range want {
			if !slices.Contains(got, r) {
				t.Errorf("%s lacks %s", c.field, r)
			}
		}
	}
}
