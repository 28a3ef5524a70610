package revision

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mydeployment-io/mydeployment-operator/internal/configref"
)

// The config a template reads is part of its revision when the controller
// records the template with its config hash (configref.WithHash): a history
// of config and template changes, each step decided as Sync decides it.
func TestDecideWithConfigHash(t *testing.T) {
	cfgA := "configmap/app=aaaaaaaaaaaaaaaa,secret/db=1111111111111111"
	cfgB := "configmap/app=bbbbbbbbbbbbbbbb,secret/db=1111111111111111"
	with := func(image, cfg string) *corev1.PodTemplateSpec {
		return configref.WithHash(templateWithImage(image), cfg)
	}
	var history []*appsv1.ControllerRevision
	current := ""
	for _, step := range []struct {
		name     string
		template *corev1.PodTemplateSpec
		create   bool
		renumber bool
		number   int64
		sameAs   int // index into the history of the revision it must be; -1 for a new one
	}{
		{name: "first revision", template: with("v1", cfgA), create: true, number: 1, sameAs: -1},
		{name: "unchanged: no write", template: with("v1", cfgA), number: 1, sameAs: 0},
		{name: "config data changed: a new revision", template: with("v1", cfgB), create: true, number: 2, sameAs: -1},
		{name: "the same config back: the old revision renumbered", template: with("v1", cfgA), renumber: true, number: 3, sameAs: 0},
		{name: "template and config changed at once: one new revision", template: with("v2", cfgB), create: true, number: 4, sameAs: -1},
		{name: "config changed again under the new template", template: with("v2", cfgA), create: true, number: 5, sameAs: -1},
	} {
		d, err := Decide(testOwner(step.template), history, current, 0)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if d.Create != step.create || d.Renumber != step.renumber || d.Update.Revision != step.number {
			t.Fatalf("%s: create=%v renumber=%v number=%d, want %v %v %d", step.name,
				d.Create, d.Renumber, d.Update.Revision, step.create, step.renumber, step.number)
		}
		if step.sameAs >= 0 && d.Update.Name != history[step.sameAs].Name {
			t.Fatalf("%s: update revision %s, want %s", step.name, d.Update.Name, history[step.sameAs].Name)
		}
		for _, r := range history {
			if d.Create && r.Name == d.Update.Name {
				t.Fatalf("%s: a new revision named like an old one (%s)", step.name, r.Name)
			}
		}
		switch {
		case d.Create:
			history = append(history, d.Update)
		case d.Renumber:
			history = withRevision(history, d.Update)
		}
		current = d.Update.Name
	}
	if len(history) != 4 {
		t.Errorf("%d revisions, want 4 (v1+A, v1+B, v2+B, v2+A)", len(history))
	}
	// The revision's template says which config it ran with.
	tmpl, err := Template(history[len(history)-1])
	if err != nil {
		t.Fatal(err)
	}
	if got := tmpl.Annotations["apps.mydeployment.io/config-hash"]; got != cfgA {
		t.Errorf("the recorded template says %q, want %q", got, cfgA)
	}
}

// withRevision is revs with rev in place of the revision of its name.
func withRevision(revs []*appsv1.ControllerRevision, rev *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	out := []*appsv1.ControllerRevision{}
	for _, r := range revs {
		if r.Name != rev.Name {
			out = append(out, r)
		}
	}
	return append(out, rev)
}
