package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Querier returns the value of one PromQL instant query at a time.
type Querier interface {
	Query(ctx context.Context, prometheus, query string, at time.Time) (float64, error)
}

// ErrNoData: the query returned no sample (an empty vector) or NaN.
var ErrNoData = errors.New("no data")

// HTTPQuerier asks Prometheus' HTTP API (GET /api/v1/query). The query
// must return one sample: a scalar, or a vector of one series.
type HTTPQuerier struct {
	Client *http.Client
}

var _ Querier = HTTPQuerier{}

// queryResponse is the part of /api/v1/query's answer read here.
type queryResponse struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// Query returns query's value at at from the Prometheus at base. An
// unreachable Prometheus, an error answer, several series or a value that
// is not a number is an error; no sample, or NaN, is ErrNoData.
func (q HTTPQuerier) Query(ctx context.Context, base, query string, at time.Time) (float64, error) {
	u := strings.TrimSuffix(base, "/") + "/api/v1/query?" + url.Values{
		"query": {query}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)},
	}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("querying %s: %w", base, err)
	}
	client := q.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("querying %s: %w", base, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("reading %s's answer: %w", base, err)
	}
	var r queryResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, fmt.Errorf("%s answered %s, not Prometheus' JSON: %w", base, resp.Status, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s answered %s: %s", base, resp.Status, r.Error)
	}
	return sampleOf(r.Data.ResultType, r.Data.Result)
}

// sampleOf reads the one value of a scalar or a vector result.
func sampleOf(resultType string, result json.RawMessage) (float64, error) {
	var pair [2]any
	switch resultType {
	case "scalar":
		if err := json.Unmarshal(result, &pair); err != nil {
			return 0, fmt.Errorf("reading a scalar: %w", err)
		}
	case "vector":
		var series []struct {
			Value [2]any `json:"value"`
		}
		if err := json.Unmarshal(result, &series); err != nil {
			return 0, fmt.Errorf("reading a vector: %w", err)
		}
		switch len(series) {
		case 0:
			return 0, ErrNoData
		case 1:
			pair = series[0].Value
		default:
			return 0, fmt.Errorf("the query returned %d series, not one: aggregate it (sum, max, ...)", len(series))
		}
	default:
		return 0, fmt.Errorf("the query returned a %s, not a scalar or a vector of one series", resultType)
	}
	s, ok := pair[1].(string)
	if !ok {
		return 0, fmt.Errorf("a sample value %v that is not a string", pair[1])
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("a sample value %q that is not a number", s)
	case math.IsNaN(v):
		return 0, ErrNoData
	}
	return v, nil
}
