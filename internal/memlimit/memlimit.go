// Package memlimit gives the Go runtime a soft memory limit below the
// container's, so the garbage collector works harder before the kernel's
// OOM killer would: GOGC alone lets the heap reach twice its live size,
// which with ten thousand cached pods can cross a tight limit.
package memlimit

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction of the container limit given to the Go runtime; the rest is for
// what the runtime does not count (the binary's pages, cgo, the kernel's
// buffers).
const Fraction = 0.9

// DefaultGCPercent is the garbage collector's target unless GOGC is set:
// the heap may grow to 1.5 times its live size between collections, not
// twice. The manager's heap is mostly its cache of pods, long-lived
// objects that a collection cannot free, so a lower target costs little
// CPU and lowers the peak (docs/benchmarks has the figures).
const DefaultGCPercent = 50

// GCPercent sets the collector's target to DefaultGCPercent unless GOGC is
// set (the user decides). It returns the percent set, or 0.
func GCPercent() int {
	if _, set := os.LookupEnv("GOGC"); set {
		return 0
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}

// cgroup files holding the memory limit: v2 first, then v1.
var limitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// FromCgroup sets the runtime's soft memory limit to Fraction of the
// cgroup's memory limit, unless GOMEMLIMIT is set (the user decides) or
// there is no limit. It returns the limit set, or 0.
func FromCgroup() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	for _, f := range limitFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if limit := softLimit(string(data)); limit > 0 {
			debug.SetMemoryLimit(limit)
			return limit
		}
		return 0
	}
	return 0
}

// softLimit parses a cgroup memory limit ("max", or bytes; cgroup v1 says
// "no limit" with a number near 2^63) and returns Fraction of it, or 0.
func softLimit(content string) int64 {
	s := strings.TrimSpace(content)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return int64(float64(n) * Fraction)
}
