package controller

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
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
		got := configRefs(md)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("annotation %q: indexed %v, want %v", tc.value, got, tc.want)
		}
	}
	if got := configRefs(&corev1.Pod{}); got != nil {
		t.Errorf("a pod indexed as %v", got)
	}
}

func newTestMD() *appsv1beta1.MyDeployment {
	md := &appsv1beta1.MyDeployment{}
	md.Name, md.Namespace = "web", "ns"
	md.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx"}}
	return md
}
