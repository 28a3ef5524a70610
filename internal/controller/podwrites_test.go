package controller

import (
	"net/http"
	"strings"
	"sync"
)

// podWriteCounter counts the pod writes a manager sends to the API server,
// at its HTTP transport (rest.Config.Wrap), so every client the manager
// builds from its config is counted: controller-runtime's, and client-go's
// typed pod client podcontrol.NewClient adds. A write is any request that
// is not a GET, LIST or WATCH, on a pod or one of its subresources.
type podWriteCounter struct {
	mu sync.Mutex
	// writes are, by namespace, the writes of each named pod in the order
	// they were sent ("PATCH status", "PATCH", "PATCH resize", "DELETE",
	// "POST eviction"); creates, which name no pod, under "" as "POST".
	writes map[string]map[string][]string
}

func newPodWriteCounter() *podWriteCounter {
	return &podWriteCounter{writes: map[string]map[string][]string{}}
}

func (c *podWriteCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			c.note(req.Method, req.URL.Path)
		}
		return rt.RoundTrip(req)
	})
}

// note records a write to path if it is a pod's:
// /api/v1/namespaces/<ns>/pods[/<name>[/<subresource>]].
func (c *podWriteCounter) note(method, path string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 5 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces" || parts[4] != "pods" {
		return
	}
	ns, name, what := parts[3], "", method
	if len(parts) > 5 {
		name = parts[5]
	}
	if len(parts) > 6 {
		what += " " + parts[6]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writes[ns] == nil {
		c.writes[ns] = map[string][]string{}
	}
	c.writes[ns][name] = append(c.writes[ns][name], what)
}

// take returns the writes counted in namespace ns since the last take, by
// pod name, and forgets them.
func (c *podWriteCounter) take(ns string) map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.writes[ns]
	delete(c.writes, ns)
	if out == nil {
		out = map[string][]string{}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
