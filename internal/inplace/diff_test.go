package inplace

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func template(mutate ...func(*corev1.PodTemplateSpec)) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{}
	t.Labels = map[string]string{"app": "web", "tier": "front"}
	t.Annotations = map[string]string{"note": "a"}
	t.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1"}}
	t.Spec.Containers = []corev1.Container{
		{Name: "web", Image: "nginx:1.27", Command: []string{"nginx"}, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}},
		{Name: "sidecar", Image: "envoy:1"},
	}
	for _, m := range mutate {
		m(t)
	}
	return t
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name       string
		change     func(*corev1.PodTemplateSpec)
		err        string // substring; "" means in place
		images     map[string]string
		resized    []string
		labels     map[string]*string
		restarting bool
	}{
		{name: "nothing", change: func(*corev1.PodTemplateSpec) {}},
		{name: "image only", change: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "nginx:1.28" },
			images: map[string]string{"web": "nginx:1.28"}, restarting: true},
		{name: "init container image", change: func(t *corev1.PodTemplateSpec) { t.Spec.InitContainers[0].Image = "busybox:2" },
			images: map[string]string{"init": "busybox:2"}, restarting: true},
		{name: "two images", change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Image, t.Spec.Containers[1].Image = "nginx:1.28", "envoy:2"
		}, images: map[string]string{"web": "nginx:1.28", "sidecar": "envoy:2"}, restarting: true},
		{name: "resources only", change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("150m")
		}, resized: []string{"web"}},
		{name: "labels and annotations", change: func(t *corev1.PodTemplateSpec) {
			t.Labels["tier"] = "back"
			delete(t.Annotations, "note")
		}, labels: map[string]*string{"tier": ptr("back")}},
		{name: "a restart (kubectl rollout restart)", change: func(t *corev1.PodTemplateSpec) {
			t.Annotations[RestartedAtAnnotation] = "2026-11-26T00:40:00Z"
		}, err: "a restart replaces the pods"},
		{name: "config data (rollout-on-config-change)", change: func(t *corev1.PodTemplateSpec) {
			t.Annotations["apps.mydeployment.io/config-hash"] = "configmap/app=bbbb"
		}, err: "the ConfigMaps or Secrets it reads changed"},
		{name: "command (mixed with an image)", change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Image = "nginx:1.28"
			t.Spec.Containers[0].Command = []string{"nginx", "-g", "daemon off;"}
		}, err: "beyond container images and resources"},
		{name: "env", change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		}, err: "beyond"},
		{name: "a container added", change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: "x", Image: "x"})
		}, err: "beyond"},
		{name: "init container resources", change: func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, err: `init container "init" changes its resources`},
		{name: "ephemeral storage", change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}, err: "other than cpu and memory"},
		{name: "QoS class Burstable to Guaranteed", change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Requests = t.Spec.Containers[0].Resources.Limits.DeepCopy()
			t.Spec.InitContainers[0].Resources = corev1.ResourceRequirements{Limits: t.Spec.Containers[0].Resources.Limits.DeepCopy()}
			t.Spec.Containers[1].Resources = corev1.ResourceRequirements{Limits: t.Spec.Containers[0].Resources.Limits.DeepCopy()}
		}, err: "init container"},
		{name: "QoS class Burstable to BestEffort", change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		}, err: "QoS class from Burstable to BestEffort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := template()
			to := template(tc.change)
			c, err := Diff(from, to)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Images) != len(tc.images) {
				t.Fatalf("images %v, want %v", c.Images, tc.images)
			}
			for k, v := range tc.images {
				if c.Images[k] != v {
					t.Fatalf("images %v, want %v", c.Images, tc.images)
				}
			}
			if len(c.Resources) != len(tc.resized) {
				t.Fatalf("resized %v, want %v", c.Resources, tc.resized)
			}
			for _, name := range tc.resized {
				if _, ok := c.Resources[name]; !ok {
					t.Fatalf("resized %v, want %v", c.Resources, tc.resized)
				}
			}
			for k, v := range tc.labels {
				if got, ok := c.Labels[k]; !ok || (got == nil) != (v == nil) || got != nil && *got != *v {
					t.Fatalf("labels %v, want %v", c.Labels, tc.labels)
				}
			}
			if c.Restarts() != tc.restarting {
				t.Fatalf("restarts %v, want %v", c.Restarts(), tc.restarting)
			}
			if tc.name == "labels and annotations" {
				if v, ok := c.Annotations["note"]; !ok || v != nil {
					t.Fatalf("annotation note not removed: %v", c.Annotations)
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestSameImage(t *testing.T) {
	for _, tc := range []struct {
		status, spec string
		same         bool
	}{
		{"nginx:1.27", "nginx:1.27", true},
		{"docker.io/library/nginx:1.27", "nginx:1.27", true},
		{"docker.io/library/nginx:latest", "nginx", true},
		{"docker.io/bitnami/redis:7", "bitnami/redis:7", true},
		{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10", true},
		{"docker.io/library/nginx:1.27", "nginx:1.28", false},
		{"localhost:5000/app:1", "localhost:5000/app:1", true},
		{"quay.io/app@sha256:abc", "quay.io/app@sha256:abc", true},
		{"quay.io/app:1", "quay.io/app:2", false},
	} {
		if got := SameImage(tc.status, tc.spec); got != tc.same {
			t.Errorf("SameImage(%q, %q) = %v, want %v", tc.status, tc.spec, got, tc.same)
		}
	}
}
