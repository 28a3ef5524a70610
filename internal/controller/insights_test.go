package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/go-logr/logr/funcr"
	"github.com/operator-framework/api/crds"
	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/upgrade"
)

// ocClient reads and writes OperatorConditions.
var ocClient client.Client

// The suite's manager runs the controller, which records into
// controller-runtime's registry. These specs start a second manager as
// cmd/main.go configures its endpoints (secured /metrics, the Upgradeable
// reporter), with its cache limited to one namespace so that MyDeployments
// left over by other specs do not hold Upgradeable, and scrape it like
// Prometheus does: HTTPS with a service account's bearer token.
var _ = Describe("Deep insights and upgrade safety", Ordered, func() {
	const conditionName = "mydeployment-operator.v0.1.0"
	var (
		ns         string
		metricsURL string
		scraper    string // bearer token allowed to GET /metrics
		outsider   string // bearer token with no RBAC
		condKey    types.NamespacedName
	)

	BeforeAll(func() {
		ns = newNamespace()
		condKey = types.NamespacedName{Namespace: ns, Name: conditionName}

		By("installing the OperatorCondition CRD and the operator's OperatorCondition, as OLM does")
		_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
			CRDs: []*apiextensionsv1.CustomResourceDefinition{crds.OperatorCondition()},
		})
		Expect(err).NotTo(HaveOccurred())
		// A client of its own: adding types to the suite's scheme would race
		// with the running manager reading it.
		ocClient, err = client.New(cfg, client.Options{Scheme: upgrade.Scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(ocClient.Create(ctx, &apiv2.OperatorCondition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: conditionName},
		})).To(Succeed())

		By("creating a service account allowed to read /metrics and one that is not")
		scraper = serviceAccountToken(ns, "scraper")
		outsider = serviceAccountToken(ns, "outsider")
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-reader-"},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		Expect(k8sClient.Create(ctx, role)).To(Succeed())
		Expect(k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-reader-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
		})).To(Succeed())

		By("starting a manager with a secured metrics endpoint and the Upgradeable reporter (OLM's env)")
		addr := freeAddress()
		metricsURL = "https://" + addr + "/metrics"
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme: scheme,
			Cache:  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
			Metrics: metricsserver.Options{
				BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization,
			},
			HealthProbeBindAddress: "0",
			Controller:             ctrlConfigForTests(),
		})
		Expect(err).NotTo(HaveOccurred())
		// Outside a pod there is no service account namespace file: the
		// operator takes its namespace from OPERATOR_NAMESPACE.
		Expect(os.Setenv(upgrade.ConditionNameEnv, conditionName)).To(Succeed())
		Expect(os.Setenv(upgrade.NamespaceEnv, ns)).To(Succeed())
		DeferCleanup(os.Unsetenv, upgrade.ConditionNameEnv)
		DeferCleanup(os.Unsetenv, upgrade.NamespaceEnv)
		Expect(upgrade.Setup(mgr, func() int { return 0 })).To(Succeed())
		mctx, mcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mctx)).To(Succeed())
		}()
		DeferCleanup(func() { mcancel(); Eventually(done, timeout).Should(BeClosed()) })
		Eventually(func() (int, error) { return httpStatus(metricsURL, scraper) }, timeout, interval).Should(Equal(http.StatusOK))
	})

	It("refuses a scrape without a token, or with a token not allowed to read /metrics", func() {
		Expect(httpStatus(metricsURL, "")).To(Equal(http.StatusUnauthorized))
		// controller-runtime answers a token the API server rejects with 500
		// "Authentication failed"; what matters is that nothing is served.
		Expect(httpStatus(metricsURL, "not-a-token")).To(BeNumerically(">=", http.StatusBadRequest))
		Expect(httpStatus(metricsURL, outsider)).To(Equal(http.StatusForbidden))
	})

	It("reports Upgradeable=True when nothing rolls out, and says upgrade gating is on", func() {
		Eventually(upgradeable(condKey), timeout, interval).Should(Equal("True/" + upgrade.ReasonSettled))
		Eventually(func() (float64, error) { return scrapeGauge(metricsURL, scraper, gatingMetric) }, timeout, interval).
			Should(BeEquivalentTo(1))
	})

	It("exposes per-MyDeployment series that move with a rollout, and holds upgrades while it runs", func() {
		md := rolling(newMD(ns, "web", 3, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		series := func(name string, extra ...string) func() (float64, error) {
			return func() (float64, error) { return scrapeValue(metricsURL, scraper, name, ns, "web", extra...) }
		}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())

		By("before any pod is ready: desired 3, none ready, rolling out, upgrades held")
		Eventually(series("mydeployment_status_replicas"), timeout, interval).Should(BeEquivalentTo(3))
		Expect(series("mydeployment_spec_replicas")()).To(BeEquivalentTo(3))
		Expect(series("mydeployment_status_replicas_ready")()).To(BeEquivalentTo(0))
		Expect(series("mydeployment_status_replicas_available")()).To(BeEquivalentTo(0))
		Expect(series("mydeployment_rollout_in_progress")()).To(BeEquivalentTo(1))
		Expect(series("mydeployment_status_update_revision")()).To(BeEquivalentTo(1))
		Expect(series("mydeployment_pods_created_total")()).To(BeEquivalentTo(3))
		Expect(series("mydeployment_status_condition", "condition", "Available", "status", "false")()).To(BeEquivalentTo(1))
		Eventually(upgradeable(condKey), timeout, interval).Should(Equal("False/" + upgrade.ReasonRolloutInProgress))
		Expect(upgradeableMessage(condKey)).To(ContainSubstring(ns + "/web"))

		By("once the pods are ready: all available, rollout over and timed, upgrades allowed")
		markAllReady(md)
		complete(md)
		Eventually(series("mydeployment_rollout_in_progress"), timeout, interval).Should(BeEquivalentTo(0))
		Expect(series("mydeployment_status_replicas_ready")()).To(BeEquivalentTo(3))
		Expect(series("mydeployment_status_replicas_available")()).To(BeEquivalentTo(3))
		Expect(series("mydeployment_status_replicas_updated")()).To(BeEquivalentTo(3))
		Expect(series("mydeployment_status_condition", "condition", "Available", "status", "true")()).To(BeEquivalentTo(1))
		Expect(series("mydeployment_rollout_duration_seconds_count")()).To(BeEquivalentTo(1))
		Eventually(upgradeable(condKey), timeout, interval).Should(Equal("True/" + upgrade.ReasonSettled))

		By("a template change: revision 2 rolls out while revision 1 stays current, upgrades held again")
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(series("mydeployment_status_update_revision"), timeout, interval).Should(BeEquivalentTo(2))
		Expect(series("mydeployment_status_current_revision")()).To(BeEquivalentTo(1))
		Expect(series("mydeployment_rollout_in_progress")()).To(BeEquivalentTo(1))
		Eventually(upgradeable(condKey), timeout, interval).Should(Equal("False/" + upgrade.ReasonRolloutInProgress))
		// No pod is marked ready: the rollout cannot move, and upgrades stay held.
		Consistently(upgradeable(condKey), 2*time.Second, 200*time.Millisecond).Should(Equal("False/" + upgrade.ReasonRolloutInProgress))

		By("the kubelet marks the new pods ready: revision 2 becomes current, upgrades allowed")
		stop := kubelet(md, 200*time.Millisecond)
		complete(md)
		stop()
		Eventually(series("mydeployment_status_current_revision"), timeout, interval).Should(BeEquivalentTo(2))
		Eventually(series("mydeployment_rollout_in_progress"), timeout, interval).Should(BeEquivalentTo(0))
		Expect(series("mydeployment_pods_created_total")()).To(BeEquivalentTo(6))
		Expect(series("mydeployment_pods_deleted_total")()).To(BeEquivalentTo(3))
		Expect(series("mydeployment_pod_write_failures_total", "operation", "create")()).To(BeEquivalentTo(0))
		Expect(series("mydeployment_rollout_duration_seconds_count")()).To(BeEquivalentTo(2))
		Eventually(upgradeable(condKey), timeout, interval).Should(Equal("True/" + upgrade.ReasonSettled))
	})

	It("stays quiet without its OperatorCondition: one log line, no error, a slow retry", func() {
		var lines []string
		logger := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
		r := &upgrade.Reporter{
			Reader:    k8sClient,
			Condition: upgrade.NewObjectCondition(ocClient, types.NamespacedName{Namespace: ns, Name: "absent"}, apiv2.ConditionType(apiv2.Upgradeable)),
		}
		for range 3 {
			res, err := r.Reconcile(logf.IntoContext(ctx, logger), reconcile.Request{})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.RequeueAfter).To(Equal(upgrade.DefaultRetryAbsent))
		}
		Expect(lines).To(HaveLen(1))
		Expect(lines[0]).To(ContainSubstring("no OperatorCondition"))
		Expect(scrapeGauge(metricsURL, scraper, gatingMetric)).To(BeEquivalentTo(0), "nothing holds upgrades")
	})

	// OLM v1 sets no OPERATOR_CONDITION_NAME: the manager starts all the same.
	It("logs one line, reports nothing and says upgrade gating is off when not installed by OLM v0", func() {
		metrics.SetUpgradeGating(true) // as if reporting before
		Expect(os.Unsetenv(upgrade.ConditionNameEnv)).To(Succeed())
		DeferCleanup(os.Setenv, upgrade.ConditionNameEnv, conditionName)
		var lines []string
		logger := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme: scheme, Logger: logger, Metrics: metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0", Controller: ctrlConfigForTests(),
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(upgrade.Setup(mgr, nil)).To(Succeed())
		Expect(lines).To(HaveLen(1))
		Expect(lines[0]).To(ContainSubstring("upgrade gating is off"))
		Expect(lines[0]).To(ContainSubstring(upgrade.ConditionNameEnv + " is not set"))
		Expect(scrapeGauge(metricsURL, scraper, gatingMetric)).To(BeEquivalentTo(0))
	})

	It("drops every series of a MyDeployment once it is deleted", func() {
		names := func() ([]string, error) { return seriesOf(metricsURL, scraper, ns, "web") }
		Expect(names()).To(ContainElements("mydeployment_spec_replicas", "mydeployment_rollout_duration_seconds",
			"mydeployment_pods_created_total", "mydeployment_status_condition"))
		Expect(k8sClient.Delete(ctx, &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})).To(Succeed())
		Eventually(names, timeout, interval).Should(BeEmpty())
		Eventually(upgradeable(condKey), timeout, interval).Should(Equal("True/" + upgrade.ReasonSettled))
	})
})

// serviceAccountToken creates service account name in ns and returns a
// token for it (TokenRequest).
func serviceAccountToken(ns, name string) string {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	Expect(k8sClient.Create(ctx, sa)).To(Succeed())
	tr := &authenticationv1.TokenRequest{}
	Expect(k8sClient.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	Expect(tr.Status.Token).NotTo(BeEmpty())
	return tr.Status.Token
}

// freeAddress returns a loopback address with a port free a moment ago.
func freeAddress() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// httpGet GETs url with token as bearer (none if empty); the server's
// certificate is self-signed, as controller-runtime makes it without one.
func httpGet(url, token string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // test server's self-signed cert
	}}
	return c.Do(req)
}

func httpStatus(url, token string) (int, error) {
	resp, err := httpGet(url, token)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// scrape returns the metric families url serves, in Prometheus' text format.
func scrape(url, token string) (map[string]*dto.MetricFamily, error) {
	resp, err := httpGet(url, token)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// scrapeValue returns the value of the series name{namespace=ns, name=md,
// extra label pairs...}; for a histogram's _count, its sample count.
func scrapeValue(url, token, name, ns, md string, extra ...string) (float64, error) {
	families, err := scrape(url, token)
	if err != nil {
		return 0, err
	}
	want := map[string]string{"namespace": ns, "name": md}
	for i := 0; i+1 < len(extra); i += 2 {
		want[extra[i]] = extra[i+1]
	}
	family, histogramCount := name, false
	if f, ok := families[name]; !ok || f == nil {
		if base, found := strings.CutSuffix(name, "_count"); found {
			family, histogramCount = base, true
		}
	}
	f, ok := families[family]
	if !ok {
		return 0, fmt.Errorf("no metric %s", family)
	}
	for _, m := range f.Metric {
		if !labelsMatch(m, want) {
			continue
		}
		switch {
		case histogramCount:
			return float64(m.GetHistogram().GetSampleCount()), nil
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), nil
		case m.Counter != nil:
			return m.GetCounter().GetValue(), nil
		}
	}
	return 0, fmt.Errorf("no series %s%v", name, want)
}

// gatingMetric says whether operator upgrades are held while rollouts run.
const gatingMetric = "mydeployment_upgrade_gating_enabled"

// scrapeGauge returns the value of the unlabelled gauge name.
func scrapeGauge(url, token, name string) (float64, error) {
	families, err := scrape(url, token)
	if err != nil {
		return 0, err
	}
	f, ok := families[name]
	if !ok || len(f.Metric) != 1 || f.Metric[0].Gauge == nil {
		return 0, fmt.Errorf("no gauge %s", name)
	}
	return f.Metric[0].GetGauge().GetValue(), nil
}

// seriesOf names the metric families with a series of MyDeployment ns/md.
func seriesOf(url, token, ns, md string) ([]string, error) {
	families, err := scrape(url, token)
	if err != nil {
		return nil, err
	}
	var names []string
	for name, f := range families {
		for _, m := range f.Metric {
			if labelsMatch(m, map[string]string{"namespace": ns, "name": md}) {
				names = append(names, name)
				break
			}
		}
	}
	return names, nil
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.Label {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}

// upgradeable returns "Status/Reason" of the Upgradeable condition the
// operator wrote on its OperatorCondition, "" if none yet.
func upgradeable(key types.NamespacedName) func() (string, error) {
	return func() (string, error) {
		c, err := upgradeableCondition(key)
		if c == nil || err != nil {
			return "", err
		}
		return string(c.Status) + "/" + c.Reason, nil
	}
}

func upgradeableMessage(key types.NamespacedName) string {
	c, err := upgradeableCondition(key)
	Expect(err).NotTo(HaveOccurred())
	Expect(c).NotTo(BeNil())
	return c.Message
}

func upgradeableCondition(key types.NamespacedName) (*metav1.Condition, error) {
	oc := &apiv2.OperatorCondition{}
	if err := ocClient.Get(ctx, key, oc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return meta.FindStatusCondition(oc.Spec.Conditions, apiv2.Upgradeable), nil
}
