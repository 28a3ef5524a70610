package chaos

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The manager as config/default deploys it.
const (
	managerNamespace = "mydeployment-operator-system"
	managerSA        = "mydeployment-operator-controller-manager"
)

// render is `kustomize build config/default`, split into objects.
func render() ([]*unstructured.Unstructured, error) {
	out, err := exec.Command(filepath.Join(projectDir, "bin", "kustomize"), "build", filepath.Join(projectDir, "config", "default")).Output()
	if err != nil {
		return nil, fmt.Errorf("kustomize build config/default: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// installRBAC applies the rendered namespace, service account and RBAC (not
// the webhook configuration: nothing serves it here) and writes a kubeconfig
// that impersonates the manager's service account, so every manager the
// suite runs has exactly the permissions config/ grants it.
func installRBAC(ctx context.Context) (string, error) {
	objs, err := render()
	if err != nil {
		return "", err
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			if err := suite.c.Patch(ctx, u, client.Apply, client.FieldOwner("chaos"), client.ForceOwnership); err != nil {
				return "", fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
			}
		}
	}
	cfg, err := clientcmd.LoadFromFile(suite.kubeconfig)
	if err != nil {
		return "", err
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + managerNamespace + ":" + managerSA
	}
	path := filepath.Join(projectDir, "bin", "chaos", "manager.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

type rule struct{ groups, resources, verbs string }

func rulesOf(t *testing.T, u *unstructured.Unstructured) []rule {
	t.Helper()
	raw, _ := yaml.Marshal(u.Object["rules"])
	var rules []rbacv1.PolicyRule
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	var out []rule
	for _, r := range rules {
		verbs := slices.Clone(r.Verbs)
		slices.Sort(verbs)
		res := strings.Join(append(slices.Clone(r.Resources), r.NonResourceURLs...), ",")
		if len(r.ResourceNames) > 0 {
			res += " named " + strings.Join(r.ResourceNames, ",")
		}
		out = append(out, rule{strings.Join(r.APIGroups, ","), res, strings.Join(verbs, ",")})
	}
	return out
}

// TestRBACGrantsOnlyWhatTheManagerUses compares the rendered roles bound to
// the manager's service account with the exact list of what it uses; a
// rule added anywhere fails it. That the list is enough is shown by every
// other test here: their managers run as that service account.
func TestRBACGrantsOnlyWhatTheManagerUses(t *testing.T) {
	objs, err := render()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]rule{
		// The reconciler: its pods, revisions, objects, status, events
		// (events.k8s.io). Pods are read from the cache, but for one that left it
		// (lost a label it selects on: get, to release it); a MyDeployment is
		// read around the cache before adoption (get) and written by
		// patch only (the revision annotation, then the status subresource);
		// a revision is read around the cache on a name collision (get). The
		// finalizers update lets the pods' and revisions' ownerReferences block
		// the owner's deletion where OwnerReferencesPermissionEnforcement is on.
		// Pods are evicted (create pods/eviction) under respect-pdb, and
		// updated in place (patch pods/status for their readiness gate,
		// pods/resize) under update-mode InPlaceIfPossible. The
		// Application reconciler applies its MyDeployment (create, patch),
		// Service, Ingress, HTTPRoute, HorizontalPodAutoscaler and
		// PodDisruptionBudget, deletes a child left out of its spec, and
		// reads EndpointSlices for its status. ConfigMaps and Secrets are
		// watched as metadata and read (get) to hash their data under
		// rollout-on-config-change.
		"ClusterRole/mydeployment-operator-manager-role": {
			{"", "configmaps,secrets", "get,list,watch"},
			{"", "pods,services", "create,delete,get,list,patch,watch"},
			{"", "pods/eviction", "create"},
			{"", "pods/resize,pods/status", "patch"},
			// The self-managed webhook certificate (config/default): its CA
			// injected into the one webhook configuration, watched through
			// a cache with no name selector.
			{"admissionregistration.k8s.io", "validatingwebhookconfigurations", "list,watch"},
			{"admissionregistration.k8s.io", "validatingwebhookconfigurations named mydeployment-operator-validating-webhook-configuration", "get,update"},
			{"apps", "controllerrevisions", "create,delete,get,list,patch,watch"},
			// A Deployment and its ReplicaSets, read around the cache while a
			// MyDeployment takes over their pods (adopt-from): no watch.
			{"apps", "deployments", "get"},
			{"apps", "replicasets", "list"},
			{"apps.mydeployment.io", "applications", "get,list,watch"},
			{"apps.mydeployment.io", "applications/finalizers,mydeployments/finalizers", "update"},
			{"apps.mydeployment.io", "applications/status,mydeployments/status", "patch"},
			{"apps.mydeployment.io", "mydeployments", "create,get,list,patch,watch"},
			{"autoscaling", "horizontalpodautoscalers", "create,delete,get,list,patch,watch"},
			// The hooks' Jobs (apps.mydeployment.io/hooks): made from a
			// suspended template Job read around the cache (get), watched
			// with the hook label, deleted with their revision.
			{"batch", "jobs", "create,delete,get,list,watch"},
			{"discovery.k8s.io", "endpointslices", "get,list,watch"},
			{"events.k8s.io", "events", "create,patch"},
			{"gateway.networking.k8s.io", "httproutes", "create,delete,get,list,patch,watch"},
			{"networking.k8s.io", "ingresses", "create,delete,get,list,patch,watch"},
			{"policy", "poddisruptionbudgets", "create,delete,get,list,patch,watch"},
		},
		// The self-managed webhook certificate's Secret, in the manager's
		// namespace only: written by name, watched through a cache of the
		// namespace's Secrets.
		"Role/mydeployment-operator-manager-role": {
			{"", "secrets", "list,watch"},
			{"", "secrets named mydeployment-operator-webhook-server-cert", "get,update"},
		},
		// Leader election: the lease and its events (core events, client-go's recorder).
		// No configmaps: controller-runtime has locked on leases only since v0.16.
		"Role/mydeployment-operator-leader-election-role": {
			{"coordination.k8s.io", "leases", "create,delete,get,list,patch,update,watch"},
			{"", "events", "create,patch"},
		},
		// Nodes, read (an informer of their own, started once a MyDeployment
		// opts in) to replace pods on draining nodes (drain SurgeFirst).
		"ClusterRole/mydeployment-operator-node-reader-role": {
			{"", "nodes", "get,list,watch"},
		},
		// The metrics endpoint's authentication and authorization of scrapers.
		"ClusterRole/mydeployment-operator-metrics-auth-role": {
			{"authentication.k8s.io", "tokenreviews", "create"},
			{"authorization.k8s.io", "subjectaccessreviews", "create"},
		},
	}
	roles := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		if u.GetKind() == "Role" || u.GetKind() == "ClusterRole" {
			roles[u.GetKind()+"/"+u.GetName()] = u
		}
	}
	// Every role bound to the manager's service account must be listed above.
	for _, u := range objs {
		if u.GetKind() != "RoleBinding" && u.GetKind() != "ClusterRoleBinding" {
			continue
		}
		raw, _ := yaml.Marshal(u.Object)
		var b rbacv1.RoleBinding
		if err := yaml.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Name == managerSA {
				if _, ok := want[b.RoleRef.Kind+"/"+b.RoleRef.Name]; !ok {
					t.Errorf("%s %s binds %s/%s to the manager: not in the expected list", u.GetKind(), u.GetName(), b.RoleRef.Kind, b.RoleRef.Name)
				}
			}
		}
	}
	for name, rules := range want {
		u, ok := roles[name]
		if !ok {
			t.Errorf("%s is not rendered", name)
			continue
		}
		if got := rulesOf(t, u); !slices.Equal(got, rules) {
			t.Errorf("%s rules:\n got %v\nwant %v", name, got, rules)
		}
	}
}

// TestManagerDeploymentIsRestricted applies the rendered Deployment in its
// namespace, which enforces the restricted Pod Security Standard:
// kube-controller-manager must create its pod (no FailedCreate), while a
// privileged pod in the same namespace is refused (the check is live).
func TestManagerDeploymentIsRestricted(t *testing.T) {
	ctx := context.Background()
	objs, err := render()
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{}
	if err := suite.c.Get(ctx, client.ObjectKey{Name: managerNamespace}, ns); err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Fatalf("namespace %s enforces %q, want restricted", managerNamespace, got)
	}
	privileged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged", Namespace: managerNamespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}},
	}
	if err := suite.c.Create(ctx, privileged, client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("a privileged pod in %s: got %v, want a PodSecurity refusal", managerNamespace, err)
	}
	var deployment *unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			deployment = u
		}
	}
	if deployment == nil {
		t.Fatal("no Deployment rendered")
	}
	if err := suite.c.Patch(ctx, deployment, client.Apply, client.FieldOwner("chaos"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = suite.c.Delete(ctx, deployment) }()
	eventually(t, time.Minute, "the manager's pod is created", func() error {
		var pods corev1.PodList
		if err := suite.c.List(ctx, &pods, client.InNamespace(managerNamespace),
			client.MatchingLabels{"control-plane": "controller-manager"}); err != nil {
			return err
		}
		var events corev1.EventList
		if err := suite.c.List(ctx, &events, client.InNamespace(managerNamespace)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" {
				t.Fatalf("kube-controller-manager could not create the manager's pod: %s", e.Message)
			}
		}
		if len(pods.Items) == 0 {
			return fmt.Errorf("no pod yet")
		}
		return nil
	})
}

// TestMetricsRefuseUnauthenticatedScrape: /metrics is served over HTTPS
// behind authentication and authorization: no token 401, a token without
// the metrics-reader role 403, a token with it 200.
func TestMetricsRefuseUnauthenticatedScrape(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	m := newManager("metrics", nil, "--metrics-bind-address="+addr)
	m.args = slices.DeleteFunc(m.args, func(a string) bool { return a == "--metrics-bind-address=0" })
	if err := m.start(); err != nil {
		t.Fatal(err)
	}
	defer m.stop()

	ns := newNamespace(t, "chaos-metrics")
	token := func(sa string) string {
		if err := suite.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
		out, err := kubectl("create", "token", sa, "-n", ns)
		if err != nil {
			t.Fatalf("kubectl create token: %v: %s", err, out)
		}
		return out
	}
	reader := token("scraper")
	stranger := token("stranger")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "chaos-metrics-reader-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "mydeployment-operator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: ns}},
	}
	if err := suite.c.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = suite.c.Delete(ctx, binding) }()

	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed serving cert
	scrape := func(tok string) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	eventually(t, time.Minute, "the metrics endpoint serves", func() error {
		_, _, err := scrape("")
		return err
	})
	for _, c := range []struct {
		who, token string
		want       int
	}{{"no token", "", http.StatusUnauthorized}, {"a service account without metrics-reader", stranger, http.StatusForbidden}} {
		if code, body, err := scrape(c.token); err != nil || code != c.want {
			t.Errorf("%s: got %d %v (%.80s), want %d", c.who, code, err, body, c.want)
		}
	}
	// A token the API server does not know: controller-runtime's filter
	// answers 500 "Authentication failed" (the TokenReview errs), a refusal all the same.
	if code, body, err := scrape("not-a-token"); err != nil || code < 400 || strings.Contains(body, "controller_runtime") {
		t.Errorf("a garbage token: got %d %v (%.80s), want a refusal", code, err, body)
	}
	// RBAC bindings reach the authorizer within a moment.
	eventually(t, 30*time.Second, "a metrics-reader scrapes", func() error {
		code, body, err := scrape(reader)
		if err != nil || code != http.StatusOK || !strings.Contains(body, "controller_runtime_reconcile_total") {
			return fmt.Errorf("got %d %v %.80s", code, err, body)
		}
		return nil
	})
}
