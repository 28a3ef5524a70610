package metrics

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
)

const (
	opCreate = "create"
	opDelete = "delete"
	opEvict  = "evict"
)

// InstrumentPods returns pods that also counts, per owner, the pods created
// and deleted (evictions are deletions) and the writes the API server
// refused; an eviction refused by a disruption budget is no failure.
func InstrumentPods(pods podcontrol.Interface) podcontrol.Interface {
	return &instrumentedPods{Interface: pods}
}

type instrumentedPods struct {
	podcontrol.Interface
}

var _ podcontrol.Interface = &instrumentedPods{}

func (p *instrumentedPods) Create(ctx context.Context, owner *appsv1beta1.MyDeployment, template *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	pod, err := p.Interface.Create(ctx, owner, template, rev)
	if err != nil {
		podWriteFailures.WithLabelValues(owner.Namespace, owner.Name, opCreate).Inc()
	} else {
		podsCreated.WithLabelValues(owner.Namespace, owner.Name).Inc()
	}
	return pod, err
}

func (p *instrumentedPods) Delete(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	err := p.Interface.Delete(ctx, owner, pod)
	if err != nil {
		podWriteFailures.WithLabelValues(owner.Namespace, owner.Name, opDelete).Inc()
	} else {
		podsDeleted.WithLabelValues(owner.Namespace, owner.Name).Inc()
	}
	return err
}

func (p *instrumentedPods) Evict(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	err := p.Interface.Evict(ctx, owner, pod)
	if refused, _ := podcontrol.EvictionRefused(err); err != nil && !refused {
		podWriteFailures.WithLabelValues(owner.Namespace, owner.Name, opEvict).Inc()
	} else if err == nil {
		podsDeleted.WithLabelValues(owner.Namespace, owner.Name).Inc()
	}
	return err
}
