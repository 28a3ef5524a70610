package memlimit

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestSoftLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"536870912\n", 483183820}, // 512Mi
		{"max\n", 0},
		{"9223372036854771712\n", 0}, // cgroup v1's "no limit"
		{"", 0},
		{"-1", 0},
	} {
		if got := softLimit(tc.in); got != tc.want {
			t.Errorf("softLimit(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200)
	if got := GCPercent(); got != 0 {
		t.Errorf("with GOGC set, GCPercent() = %d, want 0", got)
	}
	if prev := debug.SetGCPercent(200); prev != 200 {
		t.Errorf("with GOGC set, the target changed to %d", prev)
	}

	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	if got := GCPercent(); got != DefaultGCPercent {
		t.Errorf("without GOGC, GCPercent() = %d, want %d", got, DefaultGCPercent)
	}
	if prev := debug.SetGCPercent(100); prev != DefaultGCPercent {
		t.Errorf("without GOGC, the target is %d, want %d", prev, DefaultGCPercent)
	}
}
