package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// sleepHandler is sleep, run in process (coreutils has none): it waits
// for the sum of its operands, each a number of seconds, a decimal
// fraction allowed, with an optional suffix s, m, h or d as GNU sleep
// takes them. While it waits no child runs, so a forwarded signal ends
// the shell at once, as a shell without a trap dies of it.
func sleepHandler(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		if args[0] != "sleep" {
			return next(ctx, args)
		}
		hc := interp.HandlerCtx(ctx)
		if len(args) < 2 {
			fmt.Fprintln(hc.Stderr, "sleep: missing operand")
			return interp.ExitStatus(1)
		}
		var total time.Duration
		for _, a := range args[1:] {
			d, err := sleepDuration(a)
			if err != nil {
				fmt.Fprintf(hc.Stderr, "sleep: invalid time interval %q\n", a)
				return interp.ExitStatus(1)
			}
			total += d
		}
		t := time.NewTimer(total)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sleepDuration reads one operand of sleep.
func sleepDuration(s string) (time.Duration, error) {
	unit := time.Second
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 's':
			s = s[:n-1]
		case 'm':
			s, unit = s[:n-1], time.Minute
		case 'h':
			s, unit = s[:n-1], time.Hour
		case 'd':
			s, unit = s[:n-1], 24*time.Hour
		}
	}
	if strings.ContainsAny(s, "xXpPeEiInN_") { // hex, exponents, inf, nan, digit separators: not sleep's
		return 0, fmt.Errorf("not a number")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f*float64(unit) > math.MaxInt64 {
		return 0, fmt.Errorf("not a duration")
	}
	return time.Duration(f * float64(unit)), nil
}
