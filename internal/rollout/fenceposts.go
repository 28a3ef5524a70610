package rollout

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolveFenceposts turns a RollingUpdate strategy's maxSurge and
// maxUnavailable into absolute pod counts for the given replicas, exactly as
// the Deployment controller's ResolveFenceposts does:
//
//   - a nil value means 0 (API defaulting to 25% is the caller's business);
//   - a percentage of replicas rounds UP for maxSurge and DOWN for
//     maxUnavailable;
//   - if both resolve to 0, unavailable becomes 1 so a rollout can progress.
//
// unavailable is not clamped to replicas (Compute does that), as in
// Kubernetes. It returns an error, and zero counts, for a negative replicas,
// a negative value, a string that is not "<digits>%", a maxUnavailable above
// 100%, or a result that does not fit in an int32.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, replicas int32) (surge, unavailable int32, err error) {
	if replicas < 0 {
		return 0, 0, fmt.Errorf("replicas must not be negative, got %d", replicas)
	}
	surge, err = scaledValue("maxSurge", maxSurge, replicas, true, false)
	if err != nil {
		return 0, 0, err
	}
	unavailable, err = scaledValue("maxUnavailable", maxUnavailable, replicas, false, true)
	if err != nil {
		return 0, 0, err
	}
	if surge == 0 && unavailable == 0 {
		// Validation forbids an explicit 0/0, but rounding down can produce it;
		// Kubernetes then allows one unavailable pod rather than stalling.
		unavailable = 1
	}
	return surge, unavailable, nil
}

// scaledValue resolves one int-or-percent field against total; nil is 0.
func scaledValue(field string, v *intstr.IntOrString, total int32, roundUp, atMost100Percent bool) (int32, error) {
	if v == nil {
		return 0, nil
	}
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return 0, fmt.Errorf("%s must not be negative, got %d", field, v.IntVal)
		}
		return v.IntVal, nil
	case intstr.String:
		percent, err := parsePercent(v.StrVal)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", field, err)
		}
		if atMost100Percent && percent > 100 {
			return 0, fmt.Errorf("%s must not be greater than 100%%, got %q", field, v.StrVal)
		}
		// Integer arithmetic gives the exact ceil/floor that k8s computes in float64.
		product := percent * int64(total)
		scaled := product / 100
		if roundUp && product%100 != 0 {
			scaled++
		}
		if scaled > math.MaxInt32 {
			return 0, fmt.Errorf("%s %q of %d replicas overflows int32", field, v.StrVal, total)
		}
		return int32(scaled), nil
	default:
		return 0, fmt.Errorf("%s has unknown IntOrString type %d", field, v.Type)
	}
}

// parsePercent accepts what Kubernetes validation accepts: digits followed by "%".
func parsePercent(s string) (int64, error) {
	digits, ok := strings.CutSuffix(s, "%")
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, fmt.Errorf("invalid percentage %q: want a non-negative integer followed by %%", s)
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid percentage %q: %w", s, err)
	}
	return n, nil
}

// StrategyFenceposts resolves a Deployment strategy to absolute surge and
// unavailable counts for replicas, with the API defaults a strategy read back
// from a client may lack: Recreate is 0/0, RollingUpdate values default to
// 25%/25% each.
func StrategyFenceposts(strategy appsv1.DeploymentStrategy, replicas int32) (surge, unavailable int32, err error) {
	if strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return 0, 0, nil
	}
	quarter := intstr.FromString("25%")
	ms, mu := &quarter, &quarter
	if ru := strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			ms = ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			mu = ru.MaxUnavailable
		}
	}
	surge, unavailable, err = ResolveFenceposts(ms, mu, replicas)
	if err != nil {
		return 0, 0, fmt.Errorf("spec.strategy.rollingUpdate: %w", err)
	}
	return surge, unavailable, nil
}
