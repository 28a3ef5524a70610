package application

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func TestDeploymentSpecDefaults(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		selector               *metav1.LabelSelector
		labels                 map[string]string
		wantSelector, wantTmpl map[string]string
	}{
		{"nothing given", nil, nil,
			map[string]string{appsv1beta1.AppNameLabel: "web"}, map[string]string{appsv1beta1.AppNameLabel: "web"}},
		{"labels given, no selector: the name label is added", nil, map[string]string{"tier": "front"},
			map[string]string{appsv1beta1.AppNameLabel: "web"}, map[string]string{"tier": "front", appsv1beta1.AppNameLabel: "web"}},
		{"selector given, no labels: the selector's", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, nil,
			map[string]string{"app": "x"}, map[string]string{"app": "x"}},
		{"both given: as is", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, map[string]string{"app": "x", "v": "1"},
			map[string]string{"app": "x"}, map[string]string{"app": "x", "v": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &appsv1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
			app.Spec.Deployment.Selector = tc.selector
			app.Spec.Deployment.Template = &corev1.PodTemplateSpec{}
			app.Spec.Deployment.Template.Labels = tc.labels
			got := DeploymentSpec(app)
			if !reflect.DeepEqual(got.Selector.MatchLabels, tc.wantSelector) || !reflect.DeepEqual(got.Template.Labels, tc.wantTmpl) {
				t.Errorf("selector %v labels %v, want %v %v", got.Selector.MatchLabels, got.Template.Labels, tc.wantSelector, tc.wantTmpl)
			}
			if tc.selector == nil && app.Spec.Deployment.Selector != nil {
				t.Error("the Application was changed")
			}
		})
	}
}

func TestContainerServicePorts(t *testing.T) {
	got := ContainerServicePorts([]corev1.Container{
		{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {ContainerPort: 9090}}},
		{Ports: []corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}}},
	})
	want := []corev1.ServicePort{
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromString("http")},
		{Name: "tcp-9090", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9090)},
		{Name: "udp-53", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	one := ContainerServicePorts([]corev1.Container{{Ports: []corev1.ContainerPort{{ContainerPort: 80}}}})
	if one[0].Name != "" {
		t.Errorf("a lone unnamed port needs no name, got %q", one[0].Name)
	}
}

func TestURLs(t *testing.T) {
	prefix := networkingv1.PathTypePrefix
	for _, tc := range []struct {
		name string
		ing  networkingv1.Ingress
		want []string
	}{
		{"host with tls and two paths", networkingv1.Ingress{Spec: networkingv1.IngressSpec{
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"a.example.com"}}},
			Rules: []networkingv1.IngressRule{{Host: "a.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/api", PathType: &prefix}, {Path: "/", PathType: &prefix}}}}}},
		}}, []string{"https://a.example.com/", "https://a.example.com/api"}},
		{"no host: at the load balancer, none before it has one", networkingv1.Ingress{Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{}},
		}}, []string{}},
		{"default backend at an IPv6 load balancer", networkingv1.Ingress{
			Spec:   networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "2001:db8::1"}}}},
		}, []string{"http://[2001:db8::1]/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := URLs(&tc.ing); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeploymentSpecFiveLineForm(t *testing.T) {
	app := &appsv1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	app.Spec.Deployment = appsv1beta1.ApplicationDeploymentSpec{
		Image:       "nginx:1.27",
		Replicas:    ptr.To(int32(3)),
		Port:        8080,
		RolloutSpec: appsv1beta1.RolloutSpec{MinReadySeconds: 5},
	}
	got := DeploymentSpec(app)
	want := []corev1.Container{{Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}
	if !reflect.DeepEqual(got.Template.Spec.Containers, want) {
		t.Errorf("containers %+v, want %+v", got.Template.Spec.Containers, want)
	}
	if *got.Replicas != 3 || got.MinReadySeconds != 5 {
		t.Errorf("replicas %d minReadySeconds %d, want 3 and 5: the other fields pass through", *got.Replicas, got.MinReadySeconds)
	}
	if app.Spec.Deployment.Template != nil {
		t.Error("the Application was changed")
	}

	app.Spec.Deployment.Port = 0
	if ports := DeploymentSpec(app).Template.Spec.Containers[0].Ports; len(ports) != 0 {
		t.Errorf("no port given: got ports %+v", ports)
	}

	app.Spec.Deployment.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "y"}}}}
	if c := DeploymentSpec(app).Template.Spec.Containers; len(c) != 1 || c[0].Name != "x" {
		t.Errorf("both forms (refused by the webhook): the template wins, got %+v", c)
	}
}

func TestForeignItemsRemovalOrder(t *testing.T) {
	// An item is removed before its preceding siblings and before anything
	// that would shift its ancestors: a later index first, deeper first.
	items := []foreignItem{
		{tokens: []string{"spec", "ports", "1"}, value: map[string]any{"port": int64(82)}},
		{tokens: []string{"spec", "template", "spec", "containers", "2", "env", "3"}},
		{tokens: []string{"spec", "ports", "10"}, value: map[string]any{"port": int64(81)}},
		{tokens: []string{"spec", "template", "spec", "containers", "1"}},
	}
	slices.SortFunc(items, func(a, b foreignItem) int { return -compareTokens(a.tokens, b.tokens) })
	var got []string
	for _, it := range items {
		got = append(got, pointer(it.tokens))
	}
	want := []string{"/spec/template/spec/containers/2/env/3", "/spec/template/spec/containers/1", "/spec/ports/10", "/spec/ports/1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}

	patch, err := removalPatch(items[2:], []jsonPatchOp{{Op: "add", Path: "/spec/ports/-", Value: map[string]any{"port": 80}}})
	if err != nil {
		t.Fatal(err)
	}
	wantPatch := `[{"op":"test","path":"/spec/ports/10","value":{"port":81}},{"op":"test","path":"/spec/ports/1","value":{"port":82}},` +
		`{"op":"add","path":"/spec/ports/-","value":{"port":80}},` +
		`{"op":"remove","path":"/spec/ports/10"},{"op":"remove","path":"/spec/ports/1"}]`
	if string(patch) != wantPatch {
		t.Errorf("patch %s\nwant %s", patch, wantPatch)
	}
}
