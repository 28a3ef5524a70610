package controller

import (
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// byController is the pod informers' index of the UID of each pod's
// controller, or namespace/noController for orphans.
const (
	byController = "mydeployment.io/controller"
	noController = "<none>"
)

func controllerKeys(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return []string{orphanKey(pod.Namespace)}, nil
}

func orphanKey(namespace string) string { return namespace + "/" + noController }

// PodIndex reads the cached pods of one controller, or the orphans of a
// namespace, as the informers store them: pointers, no copy. A cache List
// into a PodList copies every pod into a new slice (1,240 bytes of struct
// each); on every sync that was a third of the manager's allocations.
//
// The pods it returns are the cache's own objects and must never be
// modified. MyDeploymentCache installs it in every pod informer the cache makes
// (one for all namespaces, or one per watched namespace).
type PodIndex struct {
	mu       sync.Mutex
	indexers []toolscache.Indexer
}

// NewPodIndex returns an index with no informer yet; pass it to
// MyDeploymentCache and to SetupMyDeployment.
func NewPodIndex() *PodIndex { return &PodIndex{} }

// newInformer is the cache's informer constructor: client-go's, with the
// controller index added to pod informers.
func (x *PodIndex) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration,
	indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, isPod := obj.(*corev1.Pod); !isPod {
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
	indexers = maps.Clone(indexers)
	if indexers == nil {
		indexers = toolscache.Indexers{}
	}
	indexers[byController] = controllerKeys
	inf := toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	x.mu.Lock()
	x.indexers = append(x.indexers, inf.GetIndexer())
	x.mu.Unlock()
	return inf
}

// Owned returns the cached pods whose controller has UID owner.
func (x *PodIndex) Owned(owner types.UID) ([]*corev1.Pod, error) {
	return x.lookup(string(owner))
}

// Orphans returns the cached pods of namespace that have no controller.
func (x *PodIndex) Orphans(namespace string) ([]*corev1.Pod, error) {
	return x.lookup(orphanKey(namespace))
}

func (x *PodIndex) lookup(key string) ([]*corev1.Pod, error) {
	x.mu.Lock()
	indexers := x.indexers
	x.mu.Unlock()
	if len(indexers) == 0 {
		return nil, fmt.Errorf("no pod informer: the manager's cache was not built with MyDeploymentCache")
	}
	var pods []*corev1.Pod
	for _, idx := range indexers {
		objs, err := idx.ByIndex(byController, key)
		if err != nil {
			return nil, err
		}
		if pods == nil {
			pods = make([]*corev1.Pod, 0, len(objs))
		}
		for _, o := range objs {
			if pod, ok := o.(*corev1.Pod); ok {
				pods = append(pods, pod)
			}
		}
	}
	return pods, nil
}
