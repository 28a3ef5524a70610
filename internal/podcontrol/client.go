package podcontrol

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewClient is the manager's client: controller-runtime's, except that a
// pod is created and deleted through client-go's typed pod client, as the
// ReplicaSet controller does.
//
// controller-runtime (v0.25) decodes the reply to every delete, encodes it
// as JSON again and decodes that into an unstructured object, which Delete
// then drops: 7% of the manager's CPU in a rolling update, for a reply
// nobody reads. client-go's Delete reads only the status. Creates go the
// same way so that pod creates and deletes share one client-side rate
// limiter (the manager's --kube-api-qps/--kube-api-burst), as before, when
// both went through controller-runtime's one client for pods; every other
// pod write (adoption, release, in-place steps) still does.
//
// Everything else, reads from the cache included, is client.New's. Wrap it
// (fault injection) like any client: the pod writes go through its Create
// and Delete.
func NewClient(cfg *rest.Config, opts client.Options) (client.Client, error) {
	c, err := client.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	podCfg := rest.CopyConfig(cfg)
	if podCfg.RateLimiter == nil && podCfg.QPS > 0 {
		podCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(podCfg.QPS, podCfg.Burst)
	}
	var pods *corev1client.CoreV1Client
	if opts.HTTPClient != nil {
		pods, err = corev1client.NewForConfigAndClient(podCfg, opts.HTTPClient)
	} else {
		pods, err = corev1client.NewForConfig(podCfg)
	}
	if err != nil {
		return nil, fmt.Errorf("building the pod client: %w", err)
	}
	return &podWrites{Client: c, pods: pods}, nil
}

type podWrites struct {
	client.Client
	pods corev1client.PodsGetter
}

// Create creates a pod through client-go; any other object as client.New does.
func (c *podWrites) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return c.Client.Create(ctx, obj, opts...)
	}
	o := (&client.CreateOptions{}).ApplyOptions(opts)
	created, err := c.pods.Pods(pod.Namespace).Create(ctx, pod, *o.AsCreateOptions())
	if err != nil {
		return err
	}
	// created is the reply just decoded, referenced by nothing else: pod
	// takes it over rather than a deep copy of it (one fewer copy of every
	// pod the manager creates).
	*pod = *created
	return nil
}

// Delete deletes a pod through client-go, without decoding the reply; any
// other object as client.New does.
func (c *podWrites) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return c.Client.Delete(ctx, obj, opts...)
	}
	o := (&client.DeleteOptions{}).ApplyOptions(opts)
	return c.pods.Pods(pod.Namespace).Delete(ctx, pod.Name, *o.AsDeleteOptions())
}
