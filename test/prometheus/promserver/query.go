package promserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
)

// QueryHandler answers Prometheus' instant-query API, GET /api/v1/query
// with query and time (Unix seconds; now when absent), from db through
// engine, in Prometheus' JSON: a vector or a scalar, or status "error"
// with 400 for a query that does not parse or evaluate.
func QueryHandler(engine *promql.Engine, db storage.Queryable) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		at := time.Now()
		if t := r.FormValue("time"); t != "" {
			sec, err := strconv.ParseFloat(t, 64)
			if err != nil {
				answerError(w, fmt.Errorf("time %q: %w", t, err))
				return
			}
			at = time.UnixMilli(int64(sec * 1000))
		}
		q, err := engine.NewInstantQuery(r.Context(), db, nil, r.FormValue("query"), at)
		if err != nil {
			answerError(w, err)
			return
		}
		defer q.Close()
		res := q.Exec(r.Context())
		if res.Err != nil {
			answerError(w, res.Err)
			return
		}
		data, err := resultOf(res)
		if err != nil {
			answerError(w, err)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
	})
}

// resultOf is a query result as the API's data field spells it.
func resultOf(res *promql.Result) (map[string]any, error) {
	sample := func(t int64, v float64) []any {
		return []any{float64(t) / 1000, strconv.FormatFloat(v, 'f', -1, 64)}
	}
	switch v := res.Value.(type) {
	case promql.Scalar:
		return map[string]any{"resultType": "scalar", "result": sample(v.T, v.V)}, nil
	case promql.Vector:
		out := make([]map[string]any, 0, len(v))
		for _, s := range v {
			out = append(out, map[string]any{"metric": s.Metric.Map(), "value": sample(s.T, s.F)})
		}
		return map[string]any{"resultType": "vector", "result": out}, nil
	}
	return nil, fmt.Errorf("a %s result: only scalars and vectors are answered here", res.Value.Type())
}

func answerError(w http.ResponseWriter, err error) {
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data", "error": err.Error()})
}
