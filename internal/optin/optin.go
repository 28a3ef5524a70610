// Package optin is the contract of the opt-ins, the annotations and labels
// by which a MyDeployment opts into behaviour beyond Deployment (see the
// constants in api/v1beta1): a Module per opt-in, each in its own package
// under internal/optin, listed in internal/optin/modules, whose Parse is
// the one parser for the controller, the webhook and the kubectl plugin,
// so that what admission refuses and what the controller refuses to act on
// are the same thing, with the same message. It also reads the records the
// controller keeps on the object (Records).
package optin

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodCount is a count of pods or a percentage of spec.replicas, as a
// partition and a canary step's size say it.
type PodCount struct {
	Value   int32
	Percent bool
}

// String is the annotation value c was parsed from (canonical form).
func (c PodCount) String() string {
	if c.Percent {
		return strconv.Itoa(int(c.Value)) + "%"
	}
	return strconv.Itoa(int(c.Value))
}

// Pods is how many pods c is out of replicas: a percentage rounded up (as
// StatefulSet and CloneSet round a partition), never more than replicas
// nor less than 0.
func (c PodCount) Pods(replicas int32) int32 {
	if replicas <= 0 {
		return 0
	}
	n := int64(c.Value)
	if c.Percent {
		n = (int64(c.Value)*int64(replicas) + 99) / 100
	}
	return int32(min(max(n, 0), int64(replicas)))
}

// ParsePodCount parses "<n>" with n from 0 to 2147483647, or "<p>%" with p
// from 0 to 100.
func ParsePodCount(v string) (PodCount, error) {
	const want = `must be a non-negative integer ("8") or a percentage from 0% to 100% ("80%")`
	s, percent := strings.CutSuffix(v, "%")
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 || s != strconv.FormatInt(n, 10) || percent && n > 100 {
		return PodCount{}, fmt.Errorf("%s", want)
	}
	return PodCount{Value: int32(min(n, math.MaxInt32)), Percent: percent}, nil
}

// Path is the field path of an annotation, as admission errors name it.
func Path(annotation string) *field.Path {
	return field.NewPath("metadata", "annotations").Key(annotation)
}
