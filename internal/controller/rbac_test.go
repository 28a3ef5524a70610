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
// generates from the RBAC markers) to a service account, cluster-wide as
// `make deploy` does, and returns cfg impersonating it: every spec that runs
// a manager then shows the markers grant all it does, and a verb missing
// from them fails with "forbidden".
func asManager(ctx context.Context, cfg *rest.Config) *rest.Config {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	Expect(yaml.Unmarshal(raw, role)).To(Succeed())
	Expect(k8sClient.Create(ctx, role)).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: managerNamespace, Name: managerServiceAccount}},
	})).To(Succeed())
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + managerNamespace + ":" + managerServiceAccount,
	}
	return c
}
