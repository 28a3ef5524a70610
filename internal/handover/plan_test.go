package handover

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// theMD is the MyDeployment of the plan tests: selector app=web, template
// web:2 (input's).
var theMD = &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: owner},
	Spec: appsv1beta1.MyDeploymentSpec{Selector: selector, Template: template("web:2")}}

func mdOwner(t *corev1.PodTemplateSpec) revision.Owner {
	return revision.Owner{Object: theMD, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment"), Selector: selector, Template: t}
}

// revisionOf is theMD's revision of image, numbered n, as a sync writes it.
func revisionOf(t *testing.T, image string, n int64) *appsv1.ControllerRevision {
	t.Helper()
	tmpl := template(image)
	rev, err := revision.New(mdOwner(&tmpl), n, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// numbered is rs with the Deployment controller's revision number n.
func numbered(rs *appsv1.ReplicaSet, n int) *appsv1.ReplicaSet {
	rs.Annotations = map[string]string{DeploymentRevisionAnnotation: fmt.Sprint(n)}
	return rs
}

// planOf plans in as the controller does: Record, the update revision
// decided over the history with the new revisions in it (none when
// held), then Plan. It returns the plan and the update revision.
func planOf(t *testing.T, in Input, denied string, history []*appsv1.ControllerRevision, held bool) (Plan, *appsv1.ControllerRevision) {
	t.Helper()
	rec, err := Record(in, denied, History{Owner: mdOwner(nil), Revisions: history})
	if err != nil {
		t.Fatal(err)
	}
	revs := slices.Clone(history)
	for _, n := range rec.New {
		revs = append(revs, n.Revision)
	}
	revision.Sort(revs)
	if held {
		return rec.Plan(nil, revs), nil
	}
	d, err := revision.Decide(mdOwner(in.Template), revs, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Create || d.Renumber {
		revs = append(slices.DeleteFunc(revs, func(r *appsv1.ControllerRevision) bool { return r.Name == d.Update.Name }), d.Update)
		revision.Sort(revs)
	}
	return rec.Plan(d.Update, revs), d.Update
}

// planCase is a row of TestPlan: what a sync read (in, denied, the
// history; held: no update revision yet), and what its plan must say.
type planCase struct {
	name    string
	in      Input
	denied  string
	history []*appsv1.ControllerRevision
	held    bool
	// newRevisions are "ReplicaSet:number"; record and current name
	// revisions ("update": the update revision), nil record: none
	// written; adopt are "pod:revision".
	newRevisions  []string
	record        map[string]string
	current       string
	adopt         []string
	finish        bool
	owned         int
	wait, failure string
}

// planCases are TestPlan's rows: a migration from its first sync to its
// end, each point a killed manager resumes from, and what stops it.
func planCases(t *testing.T) []planCase {
	d := deployment()
	oldRS, newRS := numbered(replicaSet("old", "web:1", 2, d), 1), numbered(replicaSet("new", "web:2", 1, d), 2)
	orphanOld, orphanNew := numbered(replicaSet("old", "web:1", 2, nil), 1), numbered(replicaSet("new", "web:2", 1, nil), 2)
	rev1, rev2, rev2renumbered := revisionOf(t, "web:1", 1), revisionOf(t, "web:2", 2), revisionOf(t, "web:2", 1)
	recorded := map[string]string{"old": rev1.Name, "new": rev2.Name}
	running := func(rsOld, rsNew *appsv1.ReplicaSet) []*corev1.Pod {
		return []*corev1.Pod{pod("a1", "old", rsOld), pod("a2", "old", rsOld), pod("b1", "new", rsNew)}
	}
	rss := []*appsv1.ReplicaSet{oldRS, newRS, replicaSet("older", "web:0", 0, d)}
	firstRecord := map[string]string{"old": rev1.Name, "new": "update"}
	return []planCase{{
		name: "first sync, mid-rollout: the old ReplicaSet's revision numbered as it, the new one's pods the update revision, the record; waiting",
		in:   input(d, nil, rss, running(oldRS, newRS)...), newRevisions: []string{"web-old:1"},
		record: firstRecord, current: rev1.Name, wait: "Deployment web still exists",
	}, {
		name: "killed after the old ReplicaSet's revision was created: it is recorded, not made again",
		in:   input(d, nil, rss, running(oldRS, newRS)...), history: []*appsv1.ControllerRevision{rev1},
		record: firstRecord, current: rev1.Name, wait: "Deployment web still exists",
	}, {
		name: "killed after the update revision was written, before the record: both recorded as they are",
		in:   input(d, nil, rss, running(oldRS, newRS)...), history: []*appsv1.ControllerRevision{rev1, rev2},
		record: map[string]string{"old": rev1.Name, "new": rev2.Name}, current: rev1.Name, wait: "Deployment web still exists",
	}, {
		name: "recorded, the Deployment still there: nothing to write, waiting",
		in:   input(d, recorded, rss, running(oldRS, newRS)...), history: []*appsv1.ControllerRevision{rev1, rev2},
		current: rev1.Name, wait: "Deployment web still exists",
	}, {
		name:    "the Deployment deleted, its ReplicaSets orphaned: waiting for them",
		in:      input(nil, recorded, []*appsv1.ReplicaSet{orphanOld, orphanNew}, running(orphanOld, orphanNew)...),
		history: []*appsv1.ControllerRevision{rev1, rev2}, current: rev1.Name, wait: "ReplicaSet web-old of Deployment web still exists",
	}, {
		name: "the ReplicaSets gone: each orphan adopted into the revision recorded for its hash",
		in:   input(nil, recorded, nil, running(nil, nil)...), history: []*appsv1.ControllerRevision{rev1, rev2},
		adopt: []string{"a1:" + rev1.Name, "a2:" + rev1.Name, "b1:" + rev2.Name}, current: rev1.Name,
		wait: "adopting 3 pods of Deployment web",
	}, {
		name:    "killed mid-adoption: the pods left adopted, those adopted counted",
		in:      input(nil, recorded, nil, ours("a1", rev1.Name), pod("a2", "old", nil), ours("b1", rev2.Name)),
		history: []*appsv1.ControllerRevision{rev1, rev2}, adopt: []string{"a2:" + rev1.Name}, current: rev1.Name, owned: 2,
		wait: "adopting 1 pods of Deployment web",
	}, {
		name:    "killed after the adoptions, the cache not listing one yet: waiting for it, the annotations kept",
		in:      input(nil, recorded, nil, ours("a1", rev1.Name), ours("uncached", rev1.Name), ours("b1", rev2.Name)),
		history: []*appsv1.ControllerRevision{rev1, rev2}, current: rev1.Name, owned: 3,
		wait: "waiting for the manager's cache to list the adopted pods uncached",
	}, {
		name:    "every pod adopted and cached: finished",
		in:      input(nil, recorded, nil, ours("a1", rev1.Name), ours("a2", rev1.Name), ours("b1", rev2.Name)),
		history: []*appsv1.ControllerRevision{rev1, rev2}, current: rev1.Name, finish: true, owned: 3,
	}, {
		name: "a Deployment with no pods, first seen: an empty record",
		in:   input(d, nil, nil), record: map[string]string{}, current: "update", wait: "Deployment web still exists",
	}, {
		name: "its record empty, the Deployment gone: finished at once",
		in:   input(nil, map[string]string{}, nil), current: "update", finish: true,
	}, {
		name: "two ReplicaSets of one template: one revision records both",
		in: input(d, nil, []*appsv1.ReplicaSet{numbered(replicaSet("x", "web:1", 1, d), 3), numbered(replicaSet("y", "web:1", 1, d), 4)},
			pod("x1", "x", nil), pod("y1", "y", nil)),
		newRevisions: []string{"web-x:3"}, record: map[string]string{"x": rev1.Name, "y": rev1.Name}, current: rev1.Name,
		wait: "Deployment web still exists",
	}, {
		name: "the update revision an older one, renumbered: recorded under its name",
		in:   input(d, nil, []*appsv1.ReplicaSet{newRS}, pod("b1", "new", newRS)), history: []*appsv1.ControllerRevision{rev2renumbered, revisionOf(t, "web:3", 2)},
		record: map[string]string{"new": rev2.Name}, current: "update", wait: "Deployment web still exists",
	}, {
		name: "held before its first revision (config): the ReplicaSets' revisions made, nothing recorded",
		in:   input(d, nil, rss, running(oldRS, newRS)...), held: true, newRevisions: []string{"web-old:1"},
		wait: "waiting for the first revision of the pod template",
	}, {
		name: "a read denied: nothing recorded, the denial said",
		in:   input(nil, nil, nil), denied: "may not list replicasets", wait: "may not list replicasets", failure: appsv1beta1.ReasonHandOverAccessDenied,
	}, {
		name: "a Deployment never seen: blocked",
		in:   input(nil, nil, nil), wait: "Deployment web does not exist and was never seen", failure: appsv1beta1.ReasonHandOverBlocked,
	}}
}

func TestPlan(t *testing.T) {
	for _, c := range planCases(t) {
		t.Run(c.name, func(t *testing.T) {
			p, update := planOf(t, c.in, c.denied, c.history, c.held)
			checkPlan(t, c, p, update)
		})
	}
}

// checkPlan fails t unless p (with update, the update revision) says what
// c says.
func checkPlan(t *testing.T, c planCase, p Plan, update *appsv1.ControllerRevision) {
	t.Helper()
	named := func(name string) string {
		if name == "update" {
			return update.Name
		}
		return name
	}
	var created []string
	for _, n := range p.Revisions {
		created = append(created, fmt.Sprintf("%s:%d", n.ReplicaSet, n.Revision.Revision))
	}
	if !slices.Equal(created, c.newRevisions) {
		t.Errorf("Revisions = %v, want %v", created, c.newRevisions)
	}
	checkRecord(t, c, p, update, named)
	var adopt []string
	for _, a := range p.Adopt {
		adopt = append(adopt, a.Pod.Name+":"+a.Revision)
	}
	if !slices.Equal(adopt, c.adopt) {
		t.Errorf("Adopt = %v, want %v", adopt, c.adopt)
	}
	if p.Finish != c.finish || p.Owned != c.owned {
		t.Errorf("Finish, Owned = %v, %d, want %v, %d", p.Finish, p.Owned, c.finish, c.owned)
	}
	if got := ""; p.Current != nil || c.current != "" {
		if p.Current != nil {
			got = p.Current.Name
		}
		if c.current == "" || got != named(c.current) {
			t.Errorf("Current = %q, want %q", got, c.current)
		}
	}
	if !strings.Contains(p.Wait, c.wait) || (c.wait == "") != (p.Wait == "") {
		t.Errorf("Wait = %q, want %q", p.Wait, c.wait)
	}
	if reason := ""; p.Failure != nil || c.failure != "" {
		if p.Failure != nil {
			reason = p.Failure.Reason
		}
		if reason != c.failure || p.Failure.Message != p.Wait {
			t.Errorf("Failure = %+v, want reason %s with the wait's message", p.Failure, c.failure)
		}
	}
}

// checkRecord fails t unless p's record names what c's does, a revision
// of the plan by the plan's own object: act names it as written.
func checkRecord(t *testing.T, c planCase, p Plan, update *appsv1.ControllerRevision, named func(string) string) {
	t.Helper()
	if (p.Record == nil) != (c.record == nil) {
		t.Fatalf("Record = %v, want %v", p.Record, c.record)
	}
	got := map[string]string{}
	for hash, target := range p.Record {
		got[hash] = target.name()
		switch {
		case c.record[hash] == "update" && target.Revision != update:
			t.Errorf("Record[%s] is not the update revision's object", hash)
		case target.Revision != nil && target.Revision != update && !slices.ContainsFunc(p.Revisions, func(n NewRevision) bool {
			return n.Revision == target.Revision
		}) && !slices.Contains(c.history, target.Revision):
			t.Errorf("Record[%s] is a revision neither planned nor read", hash)
		}
	}
	want := map[string]string{}
	for hash, name := range c.record {
		want[hash] = named(name)
	}
	if !maps.Equal(got, want) {
		t.Errorf("Record = %v, want %v", got, want)
	}
}
