package rollout

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolveFenceposts(t *testing.T) {
	i := func(v int32) *intstr.IntOrString { x := intstr.FromInt32(v); return &x }
	s := func(v string) *intstr.IntOrString { x := intstr.FromString(v); return &x }
	cases := []struct {
		name                   string
		surge, unavailable     *intstr.IntOrString
		replicas               int32
		wantSurge, wantUnavail int32
		wantErr                bool
	}{
		{name: "25%/25% of 10 -> 3/2 (surge rounds up, unavailable down)", surge: s("25%"), unavailable: s("25%"), replicas: 10, wantSurge: 3, wantUnavail: 2},
		{name: "0/0 -> 0/1", surge: i(0), unavailable: i(0), replicas: 10, wantSurge: 0, wantUnavail: 1},
		{name: "nil/nil -> 0/1", replicas: 3, wantSurge: 0, wantUnavail: 1},
		{name: "25%/25% of 1 -> 1/0", surge: s("25%"), unavailable: s("25%"), replicas: 1, wantSurge: 1, wantUnavail: 0},
		{name: "0%/25% of 3 rounds to 0/0 -> 0/1", surge: s("0%"), unavailable: s("25%"), replicas: 3, wantSurge: 0, wantUnavail: 1},
		{name: "25%/25% of 0 -> 0/1", surge: s("25%"), unavailable: s("25%"), replicas: 0, wantSurge: 0, wantUnavail: 1},
		{name: "100%/0 of 5", surge: s("100%"), unavailable: i(0), replicas: 5, wantSurge: 5, wantUnavail: 0},
		{name: "0/100% of 5", surge: i(0), unavailable: s("100%"), replicas: 5, wantSurge: 0, wantUnavail: 5},
		{name: "surge above 100% is allowed", surge: s("250%"), unavailable: i(1), replicas: 2, wantSurge: 5, wantUnavail: 1},
		{name: "33% of 100 is exact", surge: s("33%"), unavailable: s("33%"), replicas: 100, wantSurge: 33, wantUnavail: 33},
		{name: "ints above replicas are not clamped", surge: i(7), unavailable: i(9), replicas: 2, wantSurge: 7, wantUnavail: 9},
		{name: "bad percent error", surge: s("25"), unavailable: i(1), replicas: 4, wantErr: true},
		{name: "garbage error", surge: i(1), unavailable: s("abc%"), replicas: 4, wantErr: true},
		{name: "empty percent error", surge: s("%"), unavailable: i(1), replicas: 4, wantErr: true},
		{name: "signed percent error", surge: s("+5%"), unavailable: i(1), replicas: 4, wantErr: true},
		{name: "negative percent error", surge: s("-5%"), unavailable: i(1), replicas: 4, wantErr: true},
		{name: "negative int error", surge: i(-1), unavailable: i(1), replicas: 4, wantErr: true},
		{name: "maxUnavailable above 100% error", surge: i(1), unavailable: s("101%"), replicas: 4, wantErr: true},
		{name: "overflowing percent error", surge: s("99999999999%"), unavailable: i(1), replicas: 4, wantErr: true},
		{name: "overflowing result error", surge: s("2147483647%"), unavailable: i(1), replicas: 2147483647, wantErr: true},
		{name: "negative replicas error", surge: i(1), unavailable: i(1), replicas: -1, wantErr: true},
		{name: "unknown type error", surge: &intstr.IntOrString{Type: 7}, unavailable: i(1), replicas: 4, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			surge, unavail, err := ResolveFenceposts(tc.surge, tc.unavailable, tc.replicas)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if surge != tc.wantSurge || unavail != tc.wantUnavail {
				t.Fatalf("got %d/%d, want %d/%d", surge, unavail, tc.wantSurge, tc.wantUnavail)
			}
		})
	}
}
