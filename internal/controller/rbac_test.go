package controller

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// The service account the suite's managers act as.
const managerNamespace, managerServiceAccount = "default", "mydeployment-manager"

// asManager binds config/rbac/role.yaml (the ClusterRole `make manifests`
// generates from the RBAC markers) and config/rbac/node_reader_role.yaml
// (Nodes, for drains) to a service account, cluster-wide as `make deploy`
// does, and returns cfg impersonating it: every spec that runs a manager
// then shows the roles grant all it does, and a verb missing from them
// fails with "forbidden".
func asManager(ctx context.Context, cfg *rest.Config) *rest.Config {
	for _, file := range []string{"role.yaml", "node_reader_role.yaml"} {
		role := clusterRole(file)
		Expect(k8sClient.Create(ctx, role)).To(Succeed())
		bindClusterRole(ctx, role.Name, managerServiceAccount)
	}
	return impersonating(cfg, managerServiceAccount)
}

// clusterRole reads the ClusterRole of a file of config/rbac.
func clusterRole(file string) *rbacv1.ClusterRole {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", file))
	Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	Expect(yaml.Unmarshal(raw, role)).To(Succeed())
	return role
}

// bindClusterRole binds the ClusterRole named role to a service account of
// managerNamespace, cluster-wide.
func bindClusterRole(ctx context.Context, role, serviceAccount string) {
	Expect(k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + serviceAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: managerNamespace, Name: serviceAccount}},
	})).To(Succeed())
}

// impersonating is cfg acting as a service account of managerNamespace.
func impersonating(cfg *rest.Config, serviceAccount string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + managerNamespace + ":" + serviceAccount}
	return c
}
