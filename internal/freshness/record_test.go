package freshness

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name string, terminating bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	}
	return p
}

func TestObserve(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name       string
		creates    []string
		deletes    []string
		listed     []*corev1.Pod
		at         time.Duration
		satisfied  bool
		waiting    int
		leaked     int
		gone       []string // delete events the cache delivered before the sync
		thenSynced bool     // a second Observe with nothing new is satisfied
	}{
		{name: "nothing expected", satisfied: true, thenSynced: true},
		{name: "created pod not yet listed", creates: []string{"a"}, satisfied: false, waiting: 1},
		{name: "created pod listed", creates: []string{"a"}, listed: []*corev1.Pod{pod("a", false)}, satisfied: true, thenSynced: true},
		{name: "one of two creates listed", creates: []string{"a", "b"}, listed: []*corev1.Pod{pod("a", false)}, waiting: 1},
		{name: "deleted pod still listed", deletes: []string{"a"}, listed: []*corev1.Pod{pod("a", false)}, waiting: 1},
		{name: "deleted pod terminating", deletes: []string{"a"}, listed: []*corev1.Pod{pod("a", true)}, satisfied: true, thenSynced: true},
		{name: "deleted pod gone", deletes: []string{"a"}, satisfied: true, thenSynced: true},
		{name: "unobserved create leaks after timeout", creates: []string{"a"}, at: DefaultTimeout, satisfied: true, leaked: 1, thenSynced: true},
		{name: "unobserved create before timeout waits", creates: []string{"a"}, at: DefaultTimeout - time.Second, waiting: 1},
		{name: "created pod came and went before the sync listed it", creates: []string{"a"}, gone: []string{"a"}, satisfied: true, thenSynced: true},
		{name: "deleted pod's delete event", deletes: []string{"a"}, gone: []string{"a"}, listed: []*corev1.Pod{pod("a", false)}, satisfied: true, thenSynced: true},
		{name: "another pod's delete event observes nothing", creates: []string{"a"}, gone: []string{"b"}, waiting: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewRecord(0)
			for _, n := range tt.creates {
				s.ExpectCreate(n, t0)
			}
			for _, n := range tt.deletes {
				s.ExpectDelete(n, t0)
			}
			for _, n := range tt.gone {
				s.Gone(n)
			}
			got := s.Observe(tt.listed, t0.Add(tt.at))
			if got.Waiting > 0 && !got.Since.Equal(t0) {
				t.Errorf("Since = %v, want %v (when the oldest expectation was set)", got.Since, t0)
			}
			if got.Satisfied != tt.satisfied || got.Waiting != tt.waiting || len(got.Leaked) != tt.leaked {
				t.Fatalf("Observe = %+v, want satisfied=%v waiting=%d leaked=%d", got, tt.satisfied, tt.waiting, tt.leaked)
			}
			if tt.thenSynced {
				if again := s.Observe(nil, t0.Add(tt.at)); !again.Satisfied || len(again.Leaked) != 0 {
					t.Fatalf("second Observe = %+v, want satisfied with nothing leaked", again)
				}
				if s.Pending() {
					t.Fatal("pending after everything was observed")
				}
			}
		})
	}
}

// A pod deleted by someone else between its create call returning and
// ExpectCreate: its delete event comes first and must still count.
func TestGoneBeforeExpectCreate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := NewRecord(0)
	s.Open(t0)
	s.Gone("a")
	s.ExpectCreate("a", t0)
	s.ExpectCreate("b", t0)
	if r := s.Observe([]*corev1.Pod{pod("b", false)}, t0); !r.Satisfied {
		t.Fatalf("Observe = %+v, want satisfied: a came and went, b is listed", r)
	}
	// Without Open, a delete event of a pod nothing was expected of is
	// forgotten: it cannot satisfy a later create of the same name.
	s.Gone("c")
	s.ExpectCreate("c", t0)
	if r := s.Observe(nil, t0); r.Satisfied || r.Waiting != 1 {
		t.Fatalf("Observe = %+v, want c waiting", r)
	}
	if !s.Pending() {
		t.Fatal("not pending, want c pending")
	}
}

// An owner opened for creates that all failed waits on nothing: it must not
// count as pending (Upgradeable would be held False at rest).
func TestOpenAloneIsNotPending(t *testing.T) {
	s := NewRecord(0)
	s.Open(time.Unix(1000, 0))
	if s.Pending() {
		t.Fatal("pending after Open alone")
	}
}

func TestObserveChange(t *testing.T) {
	t0 := time.Unix(1000, 0)
	labelled := func(name, rev string) *corev1.Pod {
		p := pod(name, false)
		p.Labels = map[string]string{"controller-revision-hash": rev}
		return p
	}
	for _, tc := range []struct {
		name      string
		listed    []*corev1.Pod
		gone      bool
		satisfied bool
	}{
		{name: "still the old revision in the cache", listed: []*corev1.Pod{labelled("a", "old")}},
		{name: "the new revision listed", listed: []*corev1.Pod{labelled("a", "new")}, satisfied: true},
		{name: "gone from the list", satisfied: true},
		{name: "terminating", listed: []*corev1.Pod{pod("a", true)}, satisfied: true},
		{name: "seen deleted", listed: []*corev1.Pod{labelled("a", "old")}, gone: true, satisfied: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewRecord(0)
			s.ExpectChange("a", func(p *corev1.Pod) bool { return p.Labels["controller-revision-hash"] == "new" }, t0)
			if !s.Pending() {
				t.Fatal("not pending after ExpectChange")
			}
			if tc.gone {
				s.Gone("a")
			}
			r := s.Observe(tc.listed, t0.Add(time.Second))
			if r.Satisfied != tc.satisfied {
				t.Fatalf("satisfied %v, want %v (%+v)", r.Satisfied, tc.satisfied, r)
			}
			if !tc.satisfied {
				if r := s.Observe(tc.listed, t0.Add(DefaultTimeout)); !r.Satisfied || len(r.Leaked) != 1 {
					t.Fatalf("after the timeout: %+v, want satisfied with one leak", r)
				}
			}
		})
	}
}
