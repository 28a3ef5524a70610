package rollout

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Counts are the status counters of a MyDeployment, with the meaning of the
// same-named DeploymentStatus fields.
type Counts struct {
	// Replicas counts active pods: not terminating and not Succeeded/Failed.
	Replicas int32
	// Ready counts active pods whose Ready condition is True.
	Ready int32
	// Available counts active pods that are available (see IsAvailable).
	Available int32
	// Updated counts active pods created from the update revision.
	Updated int32
	// Terminating counts pods being deleted that have not finished yet.
	Terminating int32
}

// Count computes the status counters from the pods the MyDeployment owns.
// Nil entries are ignored; a pod belongs to updateRevision when its
// controller-revision-hash label equals it.
func Count(pods []*corev1.Pod, updateRevision string, minReadySeconds int32, now time.Time) Counts {
	var c Counts
	for _, pod := range pods {
		switch {
		case pod == nil:
		case isActive(pod):
			c.Replicas++
			if isReady(pod) {
				c.Ready++
			}
			if IsAvailable(pod, minReadySeconds, now) {
				c.Available++
			}
			if revisionOf(pod) == updateRevision {
				c.Updated++
			}
		case isTerminating(pod) && !isFinished(pod):
			c.Terminating++
		}
	}
	return c
}
