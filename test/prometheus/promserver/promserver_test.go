package promserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"
)

// TestScrapeAndQuery: a gauge an exporter serves is scraped into the TSDB
// and answered by /api/v1/query as Prometheus answers it (a vector with
// the target's labels, a scalar), and a query that does not parse is a
// 400 with status "error".
func TestScrapeAndQuery(t *testing.T) {
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "# TYPE ratio gauge\nratio{revision=\"web-2\"} 0.97")
	}))
	defer exporter.Close()
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	s := NewScraper(exporter.URL, db, 50*time.Millisecond, "e2e", "exporter")
	go s.Run(context.Background())
	defer func() { _, _ = s.Finish() }()
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1000, Timeout: time.Second, LookbackDelta: time.Minute})
	srv := httptest.NewServer(QueryHandler(engine, db))
	defer srv.Close()

	type answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	ask := func(q string) (int, answer) {
		resp, err := http.Get(srv.URL + "/api/v1/query?" + url.Values{"query": {q}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var a answer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, a
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, a := ask(`ratio{revision="web-2"}`)
		if string(a.Data.Result) != "[]" {
			var got []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			}
			if err := json.Unmarshal(a.Data.Result, &got); err != nil || len(got) != 1 || got[0].Value[1] != "0.97" ||
				got[0].Metric["job"] != "e2e" || a.Data.ResultType != "vector" {
				t.Fatalf("answer %+v (%s): %v", a, a.Data.Result, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the gauge was never scraped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, a := ask("1 + 1"); a.Data.ResultType != "scalar" {
		t.Fatalf("scalar: %+v", a)
	}
	if code, a := ask("rate(ratio["); code != http.StatusBadRequest || a.Status != "error" || a.Error == "" {
		t.Fatalf("a broken query: %d %+v", code, a)
	}
}
