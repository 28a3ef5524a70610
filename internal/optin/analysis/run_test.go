package analysis

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePrometheus answers /api/v1/query with the vector its body says (by
// query), as Prometheus' HTTP API does; down answers 503.
type fakePrometheus struct {
	mu      sync.Mutex
	results map[string]string // query -> the data.result JSON of a vector
	down    bool
	asked   []string
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := r.URL.Query().Get("query")
	f.asked = append(f.asked, q)
	if f.down {
		http.Error(w, `{"status":"error","errorType":"unavailable","error":"shutting down"}`, http.StatusServiceUnavailable)
		return
	}
	res, ok := f.results[q]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"parse error: unexpected end of input"}`)
		return
	}
	_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":%s}}`, res)
}

func (f *fakePrometheus) set(query, result string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results[query] = result
}

func sample(v string) string {
	return `[{"metric":{"revision":"web-2"},"value":[1700000000.000,"` + v + `"]}]`
}

func TestHTTPQuerier(t *testing.T) {
	f := &fakePrometheus{results: map[string]string{
		"one": sample("0.995"), "none": `[]`, "nan": sample("NaN"),
		"two": `[{"metric":{"a":"1"},"value":[1,"1"]},{"metric":{"a":"2"},"value":[1,"2"]}]`,
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	q := HTTPQuerier{}
	for _, tc := range []struct {
		query string
		want  float64
		err   string
	}{
		{query: "one", want: 0.995},
		{query: "none", err: "no data"},
		{query: "nan", err: "no data"},
		{query: "two", err: "the query returned 2 series, not one"},
		{query: "bad(", err: "400 Bad Request: parse error"},
	} {
		v, err := q.Query(context.Background(), srv.URL, tc.query, time.Now())
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.query, err, tc.err)
			}
			continue
		}
		if err != nil || v != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.query, v, err, tc.want)
		}
	}
	srv.Close()
	if _, err := q.Query(context.Background(), srv.URL, "one", time.Now()); err == nil || errors.Is(err, ErrNoData) {
		t.Errorf("a stopped Prometheus: error %v, want a connection error", err)
	}
}

// TestMeasure drives the measurements of one step through time: the first
// one interval after the step began, a pass only after count successes of
// every query, a failure beyond the limit fails the run, missing data is
// Inconclusive and holds until values return, and another step starts a
// new run.
func TestMeasure(t *testing.T) {
	a, err := ParseValue(`{"prometheus":"http://unused","interval":"10s","count":2,"failureLimit":1,"queries":[
		{"name":"success-rate","query":"ok{revision=\"{{revision}}\"}","threshold":">= 0.99"},
		{"name":"latency","query":"p99{revision=\"{{revision}}\"}","threshold":"<= 0.3"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePrometheus{results: map[string]string{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	a.Prometheus = srv.URL
	expand := func(s string) string { return strings.ReplaceAll(s, "{{revision}}", "web-2") }
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	key := Key{Revision: "web-2", Step: 1}
	var run *Run
	at := func(d time.Duration, want Phase, measured int) Verdict {
		t.Helper()
		var v Verdict
		var taken []Measurement
		run, v, taken = Measure(context.Background(), HTTPQuerier{}, a, run, key, expand, t0.Add(d))
		if v.Phase != want || len(taken) != measured {
			t.Fatalf("at %v: %s with %d measurements (%s), want %s with %d", d, v.Phase, len(taken), v.Message, want, measured)
		}
		return v
	}
	f.set(`ok{revision="web-2"}`, sample("0.999"))
	f.set(`p99{revision="web-2"}`, sample("0.1"))
	if v := at(0, Running, 0); v.After != 10*time.Second || !strings.Contains(v.Message, "success-rate = not measured yet (>= 0.99): 0 of 2 passed") {
		t.Fatalf("a new run: %+v", v)
	}
	at(5*time.Second, Running, 0)
	at(10*time.Second, Running, 2)
	f.set(`p99{revision="web-2"}`, `[]`)
	if v := at(20*time.Second, Inconclusive, 2); !strings.Contains(v.Message, "latency = no data (<= 0.3): 1 of 2 passed") {
		t.Fatalf("no data: %s", v.Message)
	}
	f.mu.Lock()
	f.down = true
	f.mu.Unlock()
	if v := at(30*time.Second, Inconclusive, 2); !strings.Contains(v.Message, "inconclusive: ") {
		t.Fatalf("Prometheus down: %s", v.Message)
	}
	f.mu.Lock()
	f.down = false
	f.mu.Unlock()
	f.set(`p99{revision="web-2"}`, sample("0.2"))
	if v := at(40*time.Second, Passed, 2); !strings.Contains(v.Message, "latency = 0.2 (<= 0.3): 2 of 2 passed, 0 failed (limit 1)") {
		t.Fatalf("passed: %s", v.Message)
	}
	f.set(`ok{revision="web-2"}`, sample("0.9"))
	at(50*time.Second, Passed, 2) // one failure: within the limit
	v := at(60*time.Second, Failed, 2)
	if v.Failure != "success-rate = 0.9 (wants >= 0.99)" || v.After != 0 {
		t.Fatalf("failed: %+v", v)
	}
	at(70*time.Second, Failed, 0) // a failed run measures no more

	key = Key{Revision: "web-2", Step: 2}
	at(70*time.Second, Running, 0) // the next step starts afresh
	key.RetriedAt = t0
	at(75*time.Second, Running, 0) // so does a retry
}
