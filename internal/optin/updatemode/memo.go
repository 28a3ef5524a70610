package updatemode

import (
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// Memo remembers what in-place updates compute from immutable keys:
// decoded revision templates, and whether the pods of one revision can
// move to another in place (ControllerRevisions never change: keyed by
// UID). Entries never go stale; each map is emptied when it grows past
// MaxMemo entries. One Memo serves every object of a controller, opted in
// or not: a pod created with the in-place gate steps on (rollout.Steps)
// after its object opts out. The zero value is ready to use, and safe for
// concurrent syncs.
type Memo struct {
	mu        sync.Mutex
	templates map[types.UID]*corev1.PodTemplateSpec
	diffs     map[[2]types.UID]diff
}

type diff struct {
	change *inplace.Change
	err    error
}

// MaxMemo bounds each of a Memo's maps: at 4,096 the map starts again
// empty (a template is a few KiB decoded).
const MaxMemo = 4096

// Template is rev's pod template, decoded once; callers must not modify it.
// A revision not created yet (no UID: the update revision a sync is about
// to write) is decoded every time and not kept.
func (m *Memo) Template(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	if rev.UID == "" {
		return decode(rev)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.templates[rev.UID]; ok {
		return t, nil
	}
	t, err := decode(rev)
	if err != nil {
		return nil, err
	}
	if m.templates == nil || len(m.templates) >= MaxMemo {
		m.templates = map[types.UID]*corev1.PodTemplateSpec{}
	}
	m.templates[rev.UID] = t
	return t, nil
}

func decode(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	t, err := revision.Template(rev)
	if err != nil {
		return nil, fmt.Errorf("decoding revision %s: %w", rev.Name, err)
	}
	return t, nil
}

// Diff is inplace.Diff from from's template to to's, computed once (err:
// a template that cannot be decoded; the change's own error says why the
// pods cannot move in place). fresh reports whether this call computed it,
// so that what it refuses is told once (rollout.InPlaceRevisions); a pair
// with a revision not created yet is computed every time, never kept, and
// never fresh (fresh once the revision exists).
func (m *Memo) Diff(from, to *appsv1.ControllerRevision) (change *inplace.Change, fresh bool, err error) {
	compute := func() (d diff, err error) {
		a, err := m.Template(from)
		if err != nil {
			return d, err
		}
		b, err := m.Template(to)
		if err != nil {
			return d, err
		}
		d.change, d.err = inplace.Diff(a, b)
		return d, nil
	}
	if from.UID == "" || to.UID == "" {
		d, err := compute()
		if err != nil {
			return nil, false, err
		}
		return d.change, false, d.err
	}
	key := [2]types.UID{from.UID, to.UID}
	m.mu.Lock()
	d, ok := m.diffs[key]
	m.mu.Unlock()
	if ok {
		return d.change, false, d.err
	}
	d, err = compute()
	if err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.diffs == nil || len(m.diffs) >= MaxMemo {
		m.diffs = map[[2]types.UID]diff{}
	}
	m.diffs[key] = d
	return d.change, true, d.err
}

// Change is Diff's change alone, for the planner (rollout.StepsInput.Diff).
func (m *Memo) Change(from, to *appsv1.ControllerRevision) (*inplace.Change, error) {
	c, _, err := m.Diff(from, to)
	return c, err
}
