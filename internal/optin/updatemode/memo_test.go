package updatemode

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

func template(image, env string) *corev1.PodTemplateSpec {
	c := corev1.Container{Name: "app", Image: image}
	if env != "" {
		c.Env = []corev1.EnvVar{{Name: "MODE", Value: env}}
	}
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	}
}

// rev is a ControllerRevision of t named name, created (uid set) or not ("").
func rev(t *testing.T, name string, uid types.UID, tmpl *corev1.PodTemplateSpec) *appsv1.ControllerRevision {
	t.Helper()
	raw, err := revision.Patch(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}, Data: runtime.RawExtension{Raw: raw}}
}

func TestMemoDecodesACreatedRevisionOnce(t *testing.T) {
	m := &Memo{}
	created := rev(t, "web-1", "u1", template("nginx:1.27", ""))
	a, err := m.Template(created)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m.Template(created)
	if a != b {
		t.Error("a created revision's template was decoded twice")
	}
	if a.Spec.Containers[0].Image != "nginx:1.27" {
		t.Errorf("template image = %q, want nginx:1.27", a.Spec.Containers[0].Image)
	}
	pending := rev(t, "web-2", "", template("nginx:1.28", ""))
	c, _ := m.Template(pending)
	d, _ := m.Template(pending)
	if c == d {
		t.Error("a revision not created yet (no UID) was kept: its name may be written with other data")
	}
}

func TestMemoTellsADiffFreshOnce(t *testing.T) {
	m := &Memo{}
	from := rev(t, "web-1", "u1", template("nginx:1.27", ""))
	image := rev(t, "web-2", "u2", template("nginx:1.28", ""))
	env := rev(t, "web-3", "u3", template("nginx:1.27", "fast"))

	change, fresh, err := m.Diff(from, image)
	if err != nil || change == nil || !fresh {
		t.Fatalf("first diff to a new image: change %v, fresh %v, err %v; want a change, fresh", change, fresh, err)
	}
	if _, fresh, _ := m.Diff(from, image); fresh {
		t.Error("the same pair was fresh twice: its refusal would be told on every sync")
	}
	// An env change needs a new pod: the refusal is the diff's, kept and told once.
	if _, fresh, err := m.Diff(from, env); err == nil || !fresh {
		t.Errorf("diff to a new env: fresh %v, err %v; want a refusal, fresh", fresh, err)
	}
	if _, fresh, err := m.Diff(from, env); err == nil || fresh {
		t.Errorf("diff to a new env again: fresh %v, err %v; want the refusal kept, not fresh", fresh, err)
	}
	// With a revision not created yet: computed, never fresh (fresh once it exists).
	pending := rev(t, "web-4", "", template("nginx:1.29", ""))
	for range 2 {
		if change, fresh, err := m.Diff(from, pending); err != nil || change == nil || fresh {
			t.Errorf("diff to an uncreated revision: change %v, fresh %v, err %v; want a change, not fresh", change, fresh, err)
		}
	}
	if c, err := m.Change(from, image); err != nil || c == nil || len(c.Images) != 1 {
		t.Errorf("Change = %v, %v; want the one image", c, err)
	}
}

func TestMemoNamesARevisionItCannotDecode(t *testing.T) {
	m := &Memo{}
	good := rev(t, "web-1", "u1", template("nginx:1.27", ""))
	bad := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-9", UID: "u9"}, Data: runtime.RawExtension{Raw: []byte("{")}}
	if _, _, err := m.Diff(good, bad); err == nil || !strings.Contains(err.Error(), "web-9") {
		t.Errorf("diff with undecodable data: err %v, want one naming web-9", err)
	}
	if _, err := m.Template(bad); err == nil {
		t.Error("an undecodable template was kept as decoded")
	}
}

func TestMemoStartsAgainPastItsBound(t *testing.T) {
	m := &Memo{}
	first := rev(t, "web-0", "u0", template("nginx:1.27", ""))
	kept, _ := m.Template(first)
	for i := 1; i < MaxMemo; i++ {
		r := first.DeepCopy()
		r.UID = types.UID(fmt.Sprint("u", i))
		if _, err := m.Template(r); err != nil {
			t.Fatal(err)
		}
	}
	if again, _ := m.Template(first); again != kept {
		t.Fatalf("with %d entries the first was dropped", MaxMemo)
	}
	over := first.DeepCopy()
	over.UID = "over"
	if _, err := m.Template(over); err != nil {
		t.Fatal(err)
	}
	if again, _ := m.Template(first); again == kept {
		t.Errorf("past %d entries the memo kept growing", MaxMemo)
	}
}

func TestMemoOfIsTheBuiltPart(t *testing.T) {
	part, err := Module.Build(context.Background(), optin.BuildEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if got := MemoOf(map[string]optin.Part{Name: part, "drain": nil}); got != part {
		t.Error("MemoOf did not find the module's built part")
	}
	if MemoOf(nil) == nil {
		t.Error("MemoOf without parts must give a memo a sync can use")
	}
}
