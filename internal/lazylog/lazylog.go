// Package lazylog defers a logger's key/value pairs until it writes a line.
//
// controller-runtime gives every reconcile a logger with the object's keys
// and a reconcile ID (two WithValues calls); zap encodes those values and
// copies its encoder's buffer at once, for every reconcile, though almost
// none of them writes a line: 2.4% of the manager's CPU and 5% of what it
// allocated in the benchmark's rolling update. Wrapped here, the pairs are
// kept as they are and handed to the wrapped sink, once, by the first line
// the logger (or a logger derived from it) writes. The lines are the same.
package lazylog

import (
	"slices"
	"sync"

	"github.com/go-logr/logr"
)

// New returns log with its key/value pairs deferred (a logger that
// discards everything as it is).
func New(log logr.Logger) logr.Logger {
	root := log.GetSink()
	if root == nil {
		return log
	}
	if cd, ok := root.(logr.CallDepthLogSink); ok {
		root = cd.WithCallDepth(1) // this sink's own frame
	}
	return logr.New(&sink{root: root})
}

// sink is a LogSink whose pairs are not yet given to root: those of every
// WithValues since root, in order.
type sink struct {
	root   logr.LogSink
	values []any
	// once gives the pairs to root for the first line, into withValues.
	once       sync.Once
	withValues logr.LogSink
}

var (
	_ logr.LogSink          = &sink{}
	_ logr.CallDepthLogSink = &sink{}
)

// resolved is root with the pending pairs, made once per sink.
func (s *sink) resolved() logr.LogSink {
	if len(s.values) == 0 {
		return s.root
	}
	s.once.Do(func() { s.withValues = s.root.WithValues(s.values...) })
	return s.withValues
}

// Init does nothing: root was initialized by the logger New was given.
func (s *sink) Init(logr.RuntimeInfo) {}

func (s *sink) Enabled(level int) bool { return s.root.Enabled(level) }

func (s *sink) Info(level int, msg string, keysAndValues ...any) {
	s.resolved().Info(level, msg, keysAndValues...)
}

func (s *sink) Error(err error, msg string, keysAndValues ...any) {
	s.resolved().Error(err, msg, keysAndValues...)
}

// WithValues keeps the pairs, after the pending ones, for the first line.
func (s *sink) WithValues(keysAndValues ...any) logr.LogSink {
	return &sink{root: s.root, values: append(slices.Clip(s.values), keysAndValues...)}
}

// WithName names the logger now (a name is no encoded field); the pairs
// stay pending.
func (s *sink) WithName(name string) logr.LogSink {
	return &sink{root: s.root.WithName(name), values: s.values}
}

func (s *sink) WithCallDepth(depth int) logr.LogSink {
	cd, ok := s.root.(logr.CallDepthLogSink)
	if !ok {
		return s
	}
	return &sink{root: cd.WithCallDepth(depth), values: s.values}
}
