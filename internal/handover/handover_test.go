package handover

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

const owner = types.UID("md-uid")

var selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}

func deployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "d-uid"}, Spec: appsv1.DeploymentSpec{Selector: selector}}
}

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}}}
}

// replicaSet is Deployment web's ReplicaSet of hash running image with
// replicas pods; controlled by d unless d is nil (orphaned).
func replicaSet(hash, image string, replicas int32, d *appsv1.Deployment) *appsv1.ReplicaSet {
	t := template(image)
	t.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, UID: types.UID("rs-" + hash), Labels: t.Labels},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: t}}
	if d != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
	}
	return rs
}

// pod is a pod of hash, controlled by rs (nil: an orphan).
func pod(name, hash string, rs *appsv1.ReplicaSet) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name),
		Labels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}}}
	if rs != nil {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	}
	return p
}

// ours is a pod the MyDeployment adopted into revision rev.
func ours(name, rev string) *corev1.Pod {
	p := pod(name, "h", nil)
	p.Labels[appsv1beta1.RevisionLabel] = rev
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.mydeployment.io/v1beta1", Kind: "MyDeployment",
		Name: "web", UID: owner, Controller: ptr.To(true)}}
	return p
}

func input(d *appsv1.Deployment, recorded map[string]string, rss []*appsv1.ReplicaSet, pods ...*corev1.Pod) Input {
	t := template("web:2")
	return Input{Name: "web", Deployment: d, Owner: owner, Selector: labels.SelectorFromSet(selector.MatchLabels),
		LabelSelector: selector, Template: &t, ReplicaSets: rss, Pods: pods, Recorded: recorded,
		Cached: func(uid types.UID) bool { return uid != "uncached" }}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestDecide(t *testing.T) {
	d := deployment()
	oldRS, newRS := replicaSet("old", "web:1", 8, d), replicaSet("new", "web:2", 5, d)
	orphanOld, orphanNew := replicaSet("old", "web:1", 8, nil), replicaSet("new", "web:2", 5, nil)
	emptyRS := replicaSet("older", "web:0", 0, d)
	recorded := map[string]string{"old": "web-a", "new": "web-b"}
	deleting := pod("going", "old", nil)
	deleting.DeletionTimestamp = &metav1.Time{}
	foreign := pod("foreign", "new", nil)
	foreign.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "other-new",
		UID: "other", Controller: ptr.To(true)}}
	for _, c := range []struct {
		name          string
		in            Input
		wait, blocked string
		record, adopt []string
		done          bool
		owned         int
	}{{
		name: "mid-rollout, the Deployment there: record both ReplicaSets with pods, not the empty one, and wait",
		in:   input(d, nil, []*appsv1.ReplicaSet{oldRS, newRS, emptyRS}, pod("a", "old", oldRS), pod("b", "new", newRS)),
		wait: "Deployment web still exists", record: []string{"web-old", "web-new"},
	}, {
		name: "the Deployment there, recorded: wait, nothing to record",
		in:   input(d, recorded, []*appsv1.ReplicaSet{oldRS, newRS}, pod("a", "old", oldRS)),
		wait: "Deployment web still exists",
	}, {
		name: "the Deployment gone, its ReplicaSets orphaned: still waiting for them",
		in:   input(nil, recorded, []*appsv1.ReplicaSet{orphanOld, orphanNew}, pod("a", "old", orphanOld)),
		wait: "ReplicaSet web-old of Deployment web still exists",
	}, {
		name: "the ReplicaSets gone, a pod still theirs (the garbage collector not yet there)",
		in:   input(nil, recorded, nil, pod("a", "old", orphanOld), pod("b", "new", nil)),
		wait: "pod a is still controlled by ReplicaSet web-old",
	}, {
		name: "all orphaned: adopt those of a recorded hash, live; not another's, not a foreign orphan, not a terminating one",
		in: input(nil, recorded, nil, pod("a", "old", nil), pod("b", "new", nil), pod("stray", "zzz", nil), deleting, foreign,
			ours("c", "web-b")),
		adopt: []string{"a", "b"}, owned: 1,
	}, {
		name: "adopted, but the cache does not list one yet: wait",
		in:   input(nil, recorded, nil, ours("c", "web-b"), ours("uncached", "web-a")),
		wait: "waiting for the manager's cache to list the adopted pods uncached", owned: 2,
	}, {
		name: "adopted and cached: done",
		in:   input(nil, recorded, nil, ours("c", "web-b"), ours("d", "web-a"), pod("stray", "zzz", nil)),
		done: true, owned: 2,
	}, {
		name: "a Deployment never seen: blocked, saying what to do",
		in:   input(nil, nil, nil), blocked: "Deployment web does not exist and was never seen",
	}, {
		name: "a Deployment of no pods, seen: done at once",
		in:   input(nil, map[string]string{}, nil), done: true,
	}, {
		name:    "a Deployment of another selector: blocked",
		in:      input(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}}}, nil, nil),
		wait:    "Deployment web still exists",
		blocked: "Deployment web selects app=other, not this MyDeployment's selector",
	}, {
		name: "another Deployment's ReplicaSet whose labels match: not waited for",
		in:   input(nil, recorded, []*appsv1.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Name: "web-canary-x", Labels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "x"}}}}, foreign),
		done: true,
	}} {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(c.in)
			if !strings.Contains(got.Wait, c.wait) || (c.wait == "") != (got.Wait == "") {
				t.Errorf("Wait = %q, want %q", got.Wait, c.wait)
			}
			if !strings.Contains(got.Blocked, c.blocked) || (c.blocked == "") != (got.Blocked == "") {
				t.Errorf("Blocked = %q, want %q", got.Blocked, c.blocked)
			}
			var record []string
			for _, rs := range got.Record {
				record = append(record, rs.Name)
			}
			if strings.Join(record, ",") != strings.Join(c.record, ",") {
				t.Errorf("Record = %v, want %v", record, c.record)
			}
			if a := names(got.Adopt); strings.Join(a, ",") != strings.Join(c.adopt, ",") {
				t.Errorf("Adopt = %v, want %v", a, c.adopt)
			}
			if got.Done != c.done || got.Owned != c.owned {
				t.Errorf("Done, Owned = %v, %d, want %v, %d", got.Done, got.Owned, c.done, c.owned)
			}
		})
	}
}

func TestPodsPerRevision(t *testing.T) {
	d := deployment()
	oldRS := replicaSet("old", "web:1", 8, d)
	in := input(nil, map[string]string{"old": "web-a", "new": "web-b"}, nil,
		pod("a", "old", oldRS), pod("b", "new", nil), ours("c", "web-b"), ours("e", "web-b"), pod("stray", "zzz", nil))
	got := PodsPerRevision(in)
	if got["web-a"] != 1 || got["web-b"] != 3 || len(got) != 2 {
		t.Errorf("PodsPerRevision = %v, want web-a:1 web-b:3", got)
	}
}

func TestIsReplicaSetOf(t *testing.T) {
	d := deployment()
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web-canary", UID: "c"}}
	for _, c := range []struct {
		rs   *appsv1.ReplicaSet
		want bool
	}{
		{replicaSet("abc", "x", 1, d), true},
		{replicaSet("abc", "x", 1, nil), true},
		{replicaSet("abc", "x", 1, other), false},
		{&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-canary-abc", Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "abc"}}}, false},
		{&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-abc"}}, false}, // no hash label: not the Deployment controller's
	} {
		if got := IsReplicaSetOf("web", c.rs); got != c.want {
			t.Errorf("IsReplicaSetOf(web, %s owned by %v) = %v, want %v", c.rs.Name, c.rs.OwnerReferences, got, c.want)
		}
	}
	long := strings.Repeat("a", 250)
	if n := ReplicaSetName(long, "abcdefghij"); len(n) != 253 || !strings.HasSuffix(n, "-abcdefghij") {
		t.Errorf("ReplicaSetName cuts a long name as the Deployment controller does, got %d bytes %q", len(n), n[len(n)-12:])
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	a, b := template("web:1"), template("web:1")
	b.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "abc"
	if !EqualIgnoreHash(&a, &b) {
		t.Error("templates that differ by pod-template-hash only are equal")
	}
	c := template("web:2")
	if EqualIgnoreHash(&a, &c) {
		t.Error("templates of another image are not equal")
	}
	if _, ok := b.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; !ok {
		t.Error("EqualIgnoreHash changed its argument")
	}
}

func TestConversionsKeepTheSpecAndDropTheirControllersAnnotations(t *testing.T) {
	d := deployment()
	d.Namespace = "ns"
	d.Labels = map[string]string{"team": "a"}
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "4", corev1.LastAppliedConfigAnnotation: "{}",
		"kubernetes.io/change-cause": "v2"}
	d.Spec.Replicas, d.Spec.Template, d.Spec.MinReadySeconds = ptr.To[int32](10), template("web:2"), 5
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	md := FromDeployment(d)
	if md.Name != "web" || md.Namespace != "ns" || *md.Spec.Replicas != 10 || md.Spec.MinReadySeconds != 5 ||
		md.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || md.Labels["team"] != "a" {
		t.Errorf("FromDeployment lost the spec or labels: %+v", md)
	}
	want := map[string]string{"kubernetes.io/change-cause": "v2", appsv1beta1.AdoptFromAnnotation: "Deployment/web"}
	if len(md.Annotations) != len(want) || md.Annotations["kubernetes.io/change-cause"] != "v2" ||
		md.Annotations[appsv1beta1.AdoptFromAnnotation] != "Deployment/web" {
		t.Errorf("FromDeployment annotations = %v, want %v", md.Annotations, want)
	}

	md.Annotations[appsv1beta1.RevisionAnnotation] = "7"
	rs := ReplicaSetFor(md, "h1", 10)
	if rs.Name != "web-h1" || *rs.Spec.Replicas != 10 || rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != "h1" ||
		rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "h1" || rs.Labels["app"] != "web" ||
		rs.Annotations[DeploymentRevisionAnnotation] != "7" || len(rs.OwnerReferences) != 0 {
		t.Errorf("ReplicaSetFor = %+v", rs)
	}
	if !EqualIgnoreHash(&rs.Spec.Template, &md.Spec.Template) || md.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "" ||
		md.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != "" {
		t.Error("the ReplicaSet's template is the MyDeployment's with the hash; the MyDeployment is left as it was")
	}
	back := DeploymentFor(md, 10)
	if !back.Spec.Paused || *back.Spec.Replicas != 10 || back.Annotations["kubernetes.io/change-cause"] != "v2" ||
		len(back.Annotations) != 1 || back.Spec.MinReadySeconds != 5 {
		t.Errorf("DeploymentFor = %+v (paused, its replicas, no annotation of ours)", back)
	}
}
