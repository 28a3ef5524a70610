package controller

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// wireLog records, below every client of a manager (rest.Config.Wrap),
// the media types of each request it sends for a built-in kind: what it
// accepts back and, for a body that is an object (not a patch), what it
// sends.
type wireLog struct {
	mu sync.Mutex
	// seen: "<METHOD> <resource>[/<subresource>][ watch]" -> "accept=<type> body=<type>" -> count
	seen map[string]map[string]int
}

func (l *wireLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if res := builtinResource(req.URL.Path); res != "" {
			op := req.Method + " " + res
			if req.URL.Query().Get("watch") == "true" {
				op += " watch"
			}
			media := "accept=" + firstMediaType(req.Header.Get("Accept"))
			if ct := firstMediaType(req.Header.Get("Content-Type")); ct != "" && !strings.Contains(ct, "patch") {
				media += " body=" + ct
			}
			l.mu.Lock()
			if l.seen[op] == nil {
				l.seen[op] = map[string]int{}
			}
			l.seen[op][media]++
			l.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// notProtobuf lists the requests whose accepted or sent media type is not
// protobuf.
func (l *wireLog) notProtobuf() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for op, media := range l.seen {
		for m, n := range media {
			for _, field := range strings.Fields(m) {
				if _, typ, _ := strings.Cut(field, "="); typ != runtime.ContentTypeProtobuf {
					out = append(out, fmt.Sprintf("%s (%s) x%d", op, m, n))
					break
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func (l *wireLog) ops() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for op := range l.seen {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}

// firstMediaType is the first media type of an Accept or Content-Type
// header, without parameters.
func firstMediaType(h string) string {
	first, _, _ := strings.Cut(h, ",")
	t, _, err := mime.ParseMediaType(strings.TrimSpace(first))
	if err != nil {
		return strings.TrimSpace(first)
	}
	return t
}

// builtinResource names the built-in resource of a request path
// ("pods", "pods/status", "controllerrevisions", "events"), or "" for a
// custom resource, discovery and anything else: /api/v1/[namespaces/<ns>/]<resource>[/<name>[/<sub>]]
// and /apis/<group>/<version>/... for the groups the manager writes.
func builtinResource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api" && parts[1] == "v1":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis" && (parts[1] == "apps" || parts[1] == "events.k8s.io" ||
		parts[1] == "coordination.k8s.io" || parts[1] == "policy"):
		parts = parts[3:]
	default:
		return ""
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	if len(parts) == 3 {
		return parts[0] + "/" + parts[2]
	}
	return parts[0]
}

// What goes over the wire: kube-controller-manager talks protobuf to the
// API server for built-in kinds, and so does our manager, for its pods'
// list, watch, creates and deletes, its revisions and events:
// controller-runtime asks for protobuf for the built-in types its cache and
// client know (unless the rest config names a content type), and client-go's
// generated clients (podcontrol.NewClient's pod writes, the event recorder's)
// prefer it since v0.33. Only custom resources (MyDeployment) are JSON: they
// have no protobuf form. A content type set on the manager's rest config
// would silently turn all of it into JSON; this test would see it.
var _ = Describe("the manager's wire format", Ordered, Serial, func() {
	wire := &wireLog{seen: map[string]map[string]int{}}
	BeforeAll(func() {
		stopManager()
		c := rest.CopyConfig(managerCfg)
		c.Wrap(wire.wrap)
		startManagerWith(c, nil)
	})
	AfterAll(func() {
		stopManager()
		startManager()
	})

	It("is protobuf for every built-in kind it reads, watches, creates and deletes", func() {
		ns := newNamespace()
		md := newMD(ns, "wire", 4, "nginx:1.27")
		createReady(md)
		stop := kubelet(md, 100*time.Millisecond)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		complete(md)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](2) })
		complete(md)
		stop()

		Expect(wire.ops()).To(ContainElements("GET pods", "GET pods watch", "POST pods", "DELETE pods", "POST controllerrevisions",
			"GET controllerrevisions watch", "POST events"), "the scenario covers the manager's pod and revision traffic")
		Expect(wire.notProtobuf()).To(BeEmpty(), "requests for built-in kinds not in protobuf")
	})
})
