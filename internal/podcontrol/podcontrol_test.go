package podcontrol

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// patchLog records the patches UpdateInPlace sends, by subresource ("" for
// the pod), and sends none on.
type patchLog struct {
	sent []sentPatch
}

type sentPatch struct {
	subresource string
	kind        types.PatchType
	body        map[string]any
}

func (l *patchLog) client(t *testing.T) client.Client {
	record := func(sub string, obj client.Object, patch client.Patch) error {
		data, err := patch.Data(obj)
		if err != nil {
			return err
		}
		body := map[string]any{}
		if err := json.Unmarshal(data, &body); err != nil {
			t.Fatalf("patch is not JSON: %s", data)
		}
		l.sent = append(l.sent, sentPatch{sub, patch.Type(), body})
		return nil
	}
	return interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
			return record("", obj, patch)
		},
		SubResourcePatch: func(_ context.Context, _ client.Client, sub string, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
			return record(sub, obj, patch)
		},
	})
}

func cpu(v string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}
}

// UpdateInPlace is one pod patch carrying the images and the new
// revision's labels and the template's label and annotation changes
// (issue 31: no separate relabel), then a resize only where resources
// differ; what the pod has already is not written again.
func TestUpdateInPlaceOnePatch(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns",
			Labels: map[string]string{"app": "web", appsv1beta1.RevisionLabel: "web-old", appsv1beta1.PodTemplateHashLabel: "old",
				"gone": "x", "kept": "same"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx:1.27", Resources: cpu("100m")}, {Name: "side", Image: "envoy:1"}},
		},
	}
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-new", Labels: map[string]string{revision.HashLabel: "new"}}}
	target := &corev1.PodTemplateSpec{Spec: *pod.Spec.DeepCopy()}
	target.Spec.Containers[0].Image = "nginx:1.28"
	target.Spec.Containers[0].Resources = cpu("200m")
	target.Spec.InitContainers[0].Image = "busybox:2"
	web, same := "web", "same"
	change := &inplace.Change{Labels: map[string]*string{"tier": &web, "gone": nil, "kept": &same},
		Annotations: map[string]*string{"note": &web}}

	var log patchLog
	r := &Real{Client: log.client(t)}
	if err := r.UpdateInPlace(context.Background(), nil, pod, rev, target, change); err != nil {
		t.Fatal(err)
	}
	want := []sentPatch{
		{"", types.StrategicMergePatchType, map[string]any{
			"metadata": map[string]any{
				"labels": map[string]any{appsv1beta1.RevisionLabel: "web-new", appsv1beta1.PodTemplateHashLabel: "new",
					"tier": "web", "gone": nil},
				"annotations": map[string]any{"note": "web"},
			},
			"spec": map[string]any{
				"containers":     []any{map[string]any{"name": "app", "image": "nginx:1.28"}},
				"initContainers": []any{map[string]any{"name": "init", "image": "busybox:2"}},
			},
		}},
		{"resize", types.StrategicMergePatchType, map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app",
				"resources": map[string]any{"requests": map[string]any{"cpu": "200m"}}}}},
		}},
	}
	if !reflect.DeepEqual(log.sent, want) {
		t.Fatalf("sent %+v\nwant %+v", log.sent, want)
	}

	// The patch landed and the resize failed: only the resize again.
	moved := pod.DeepCopy()
	moved.Labels = map[string]string{"app": "web", appsv1beta1.RevisionLabel: "web-new", appsv1beta1.PodTemplateHashLabel: "new",
		"tier": "web", "kept": "same"}
	moved.Annotations = map[string]string{"note": "web"}
	moved.Spec.Containers[0].Image, moved.Spec.InitContainers[0].Image = "nginx:1.28", "busybox:2"
	log.sent = nil
	if err := r.UpdateInPlace(context.Background(), nil, moved, rev, target, change); err != nil {
		t.Fatal(err)
	}
	if len(log.sent) != 1 || log.sent[0].subresource != "resize" {
		t.Fatalf("sent %+v, want the resize alone", log.sent)
	}
}
