package memlimit

import "testing"

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
