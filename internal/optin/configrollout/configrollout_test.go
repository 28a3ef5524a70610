package configrollout

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Only MyDeployments that opt in (with a valid value) are indexed by the
// config they read: an edit of a ConfigMap nobody opted into syncs nothing.
func TestConfigRefsIndexesOnlyOptedIn(t *testing.T) {
	md := newTestMD()
	md.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
	}
	for _, tc := range []struct {
		value string // "" for no annotation
		want  []string
	}{
		{"", []string{}},
		{"false", []string{}},
		{"yes", []string{}},
		{"true", []string{"configmap/app", "secret/db"}},
	} {
		md.Annotations = map[string]string{}
		if tc.value != "" {
			md.Annotations[appsv1beta1.RolloutOnConfigChangeAnnotation] = tc.value
		}
		got := Refs(md)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("annotation %q: indexed %v, want %v", tc.value, got, tc.want)
		}
	}
	if got := Refs(&corev1.Pod{}); got != nil {
		t.Errorf("a pod indexed as %v", got)
	}
}

func newTestMD() *appsv1beta1.MyDeployment {
	md := &appsv1beta1.MyDeployment{}
	md.Name, md.Namespace = "web", "ns"
	md.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx"}}
	return md
}

// reading is an opted-in MyDeployment of namespace ns whose template reads
// the ConfigMap "app" and the Secret "db", and a client (the API reader)
// that holds objs.
func reading(t *testing.T, objs ...client.Object) (*appsv1beta1.MyDeployment, *Config, client.WithWatch) {
	t.Helper()
	md := newTestMD()
	md.Annotations = map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "true"}
	md.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
	}
	spec, errs := Module.Parse(md)
	if len(errs) > 0 || spec == nil {
		t.Fatalf("parse: %v, %v", spec, errs)
	}
	// No watch: what a reconciler built without one observes.
	observed := spec.(*Config).Observe(nil).(*Config)
	return md, observed, fake.NewClientBuilder().WithObjects(objs...).Build()
}

func configMap(data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"LEVEL": data}}
}

func secret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Data: map[string][]byte{"PASSWORD": []byte("x")}}
}

// points is what the sync's later points see of a read spec: the update
// revision's input and the status's.
func points(c optin.Spec, md *appsv1beta1.MyDeployment) (revision.Input, status.Input) {
	rin := revision.Input{Template: &md.Spec.Template}
	c.(revision.Contributor).RevisionInput(&rin)
	sin := status.Input{Synced: true}
	c.(status.Reporter).ReportInput(&sin)
	return rin, sin
}

// Read hashes the config the template reads into the template the
// revision records (a copy: the spec is not changed), and a data edit
// changes it.
func TestReadPutsTheHashesInTheRevisionsTemplate(t *testing.T) {
	ctx := context.Background()
	md, c, api := reading(t, configMap("info"), secret())
	read, err := c.Read(ctx, md, optin.ReadEnv{APIReader: api, RecordsRevision: true})
	if err != nil {
		t.Fatal(err)
	}
	rin, sin := points(read, md)
	if rin.Held || rin.Key == "" || rin.Template == &md.Spec.Template {
		t.Fatalf("revision input %+v: want the template replaced, with a key", rin)
	}
	hash := rin.Template.Annotations[appsv1beta1.ConfigHashAnnotation]
	if hash != rin.Key || !strings.Contains(hash, "configmap/app") || !strings.Contains(hash, "secret/db") {
		t.Errorf("the revision's template carries %q (key %q): want both objects' hashes", hash, rin.Key)
	}
	if _, ok := md.Spec.Template.Annotations[appsv1beta1.ConfigHashAnnotation]; ok {
		t.Error("the spec's template was changed")
	}
	if !sin.Synced || sin.Failure != nil {
		t.Errorf("status input %+v: nothing to report", sin)
	}

	if err := api.Update(ctx, configMap("debug")); err != nil {
		t.Fatal(err)
	}
	read, err = c.Read(ctx, md, optin.ReadEnv{APIReader: api, RecordsRevision: true})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := points(read, md); again.Key == rin.Key {
		t.Errorf("a data edit left the revision's key %q", again.Key)
	}
}

// A referenced object missing (and not optional), or a read the API server
// refuses, holds the revision and says why in ReplicaFailure; the
// generation is not observed. Access denied is looked at again after the
// watch's poll (no watch: no retry of its own).
func TestReadHoldsOnMissingOrDeniedConfig(t *testing.T) {
	ctx := context.Background()
	md, c, api := reading(t, configMap("info"))
	read, err := c.Read(ctx, md, optin.ReadEnv{APIReader: api, RecordsRevision: true})
	if err != nil {
		t.Fatal(err)
	}
	rin, sin := points(read, md)
	if !rin.Held || rin.Template != &md.Spec.Template {
		t.Errorf("revision input %+v: want held, the template untouched", rin)
	}
	if sin.Synced || sin.Failure == nil || sin.Failure.Reason != appsv1beta1.ReasonConfigMissing ||
		!strings.Contains(sin.Failure.Message, "secret/db") {
		t.Errorf("status input %+v: want ConfigMissing naming secret/db, not synced", sin)
	}
	// Another module's failure is said first.
	other := &status.Failure{Reason: "Other"}
	sin = status.Input{Synced: true, Failure: other}
	read.(status.Reporter).ReportInput(&sin)
	if sin.Failure != other || sin.Synced {
		t.Errorf("status input %+v: want the other failure kept, not synced", sin)
	}

	forbidden := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Secret); ok {
			return apierrors.NewForbidden(corev1.Resource("secrets"), key.Name, errors.New("injected"))
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	denied := interceptor.NewClient(api, forbidden)
	read, err = c.Read(ctx, md, optin.ReadEnv{APIReader: denied, RecordsRevision: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, sin := points(read, md); sin.Failure == nil || sin.Failure.Reason != appsv1beta1.ReasonConfigAccessDenied ||
		!strings.Contains(sin.Failure.Message, "read secrets in namespace ns") {
		t.Errorf("status input %+v: want ConfigAccessDenied naming secrets in ns", sin)
	}

	// Any other error ends the sync: it is no hold.
	broken := interceptor.NewClient(api, interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewInternalError(errors.New("injected"))
	}})
	if _, err := c.Read(ctx, md, optin.ReadEnv{APIReader: broken, RecordsRevision: true}); err == nil {
		t.Error("a failed read was not an error")
	}
}

// A sync that records no revision (paused, no hand-over) reads nothing.
func TestReadNothingWhileNoRevisionIsRecorded(t *testing.T) {
	md, c, _ := reading(t)
	broken := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		t.Error("read the API server")
		return nil
	}})
	read, err := c.Read(context.Background(), md, optin.ReadEnv{APIReader: broken})
	if err != nil {
		t.Fatal(err)
	}
	if rin, sin := points(read, md); rin.Held || rin.Template != &md.Spec.Template || sin.Failure != nil || !sin.Synced {
		t.Errorf("revision input %+v, status input %+v: want nothing", rin, sin)
	}
}
