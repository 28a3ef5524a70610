package lazylog

import (
	"bytes"
	"errors"
	"regexp"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// script logs through log as a reconcile does: a named logger, the
// object's keys, a reconcile ID, a V(1) line that is off, and two lines.
func script(log logr.Logger) {
	l := log.WithName("controller").WithValues("controller", "mydeployment", "controllerKind", "MyDeployment")
	r := l.WithValues("MyDeployment", map[string]string{"name": "a", "namespace": "b"}, "namespace", "b", "name", "a")
	r = r.WithValues("reconcileID", "1234")
	r.V(1).Info("plan", "pods", []string{"x", "y"})
	r.Info("waiting for the cache", "pending", 3)
	r.WithName("sub").Error(errors.New("boom"), "failed", "pod", "p")
	l.Info("started")
}

var timestamp = regexp.MustCompile(`"ts":"[^"]*"`)

// The lines are byte for byte those of the wrapped logger (but the time).
func TestSameLines(t *testing.T) {
	var direct, lazy bytes.Buffer
	for _, log := range []logr.Logger{zap.New(zap.WriteTo(&direct)), New(zap.New(zap.WriteTo(&lazy)))} {
		script(log) // one call site: the stack traces must match too
	}
	d, l := timestamp.ReplaceAllString(direct.String(), ""), timestamp.ReplaceAllString(lazy.String(), "")
	if d != l || d == "" {
		t.Fatalf("lines differ:\n%s\nlazily:\n%s", d, l)
	}
}

// counting is a LogSink that counts the WithValues calls it receives.
type counting struct {
	logr.LogSink
	withValues *int
}

func (c counting) WithValues(kv ...any) logr.LogSink {
	*c.withValues++
	return counting{c.LogSink.WithValues(kv...), c.withValues}
}

func (c counting) WithName(name string) logr.LogSink {
	return counting{c.LogSink.WithName(name), c.withValues}
}

// A logger that writes nothing encodes nothing; one that writes hands its
// pairs over once, however many lines it writes.
func TestValuesOnlyForALine(t *testing.T) {
	n := 0
	log := New(logr.New(counting{funcr.New(func(string, string) {}, funcr.Options{}).GetSink(), &n}))
	r := log.WithValues("a", 1).WithValues("b", 2)
	r.V(1).Info("off")
	if n != 0 {
		t.Fatalf("%d WithValues before any line", n)
	}
	r.Info("one")
	r.Info("two")
	if n != 1 {
		t.Fatalf("%d WithValues for two lines, want 1", n)
	}
}

func TestDiscard(t *testing.T) {
	if log := New(logr.Discard()); log.GetSink() != nil {
		t.Fatal("a discarding logger must stay one")
	}
}
