// Package managercache composes the manager's one cache from what each
// controller needs of it, and refuses a composition in which one
// controller's filter or transform would change what another reads.
package managercache

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Needs is what one controller needs of the manager's cache.
type Needs struct {
	// Controller names the controller in Compose's errors.
	Controller string
	// Objects lists every type the controller reads from the cache, watches
	// included. A ByObject that filters (Label, Field, Namespaces) or
	// reshapes (Transform) makes the cache hold only that view of the type,
	// for every controller; the zero ByObject holds every object whole.
	Objects map[client.Object]cache.ByObject
	// NewInformer, when set, builds the cache's informers (of every type:
	// it must build the ones it does not care about as client-go does).
	NewInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration,
		toolscache.Indexers) toolscache.SharedIndexInformer
}

// Compose returns the manager's cache options: each controller's Objects
// that it filters or reshapes (the others are the cache's default),
// managedFields stripped from every object without a Transform of its own
// (no controller reads them: the Application applies server-side), and
// only the given namespaces (all when empty), as OLM's target namespaces
// say.
//
// It returns an error, naming the type and both controllers, when a type
// is listed by two controllers and either of them filters or reshapes it
// (one cache holds one view of a type, so the other controller would read
// the first one's view), or when two controllers set NewInformer.
func Compose(namespaces []string, needs ...Needs) (cache.Options, error) {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{},
	}
	type listing struct {
		controller string
		by         cache.ByObject
	}
	listed := map[reflect.Type]listing{}
	informerFrom := ""
	for _, n := range needs {
		for obj, by := range n.Objects {
			t := reflect.TypeOf(obj)
			if first, ok := listed[t]; ok {
				if !plain(first.by) || !plain(by) {
					return cache.Options{}, fmt.Errorf("%s: listed by the %s and %s controllers, and one of them "+
						"filters or transforms it, which the other would then see", strings.TrimPrefix(t.String(), "*"),
						first.controller, n.Controller)
				}
				continue
			}
			listed[t] = listing{controller: n.Controller, by: by}
			if !plain(by) {
				// A plain type is the cache's default: listing it in ByObject
				// would also make the manager look up its REST mapping at
				// start, and fail while a CRD is not yet installed.
				opts.ByObject[obj] = by
			}
		}
		if n.NewInformer != nil {
			if informerFrom != "" {
				return cache.Options{}, fmt.Errorf("the %s and %s controllers both set the cache's NewInformer",
					informerFrom, n.Controller)
			}
			informerFrom, opts.NewInformer = n.Controller, n.NewInformer
		}
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts, nil
}

// plain: the cache holds every object of the type, whole.
func plain(by cache.ByObject) bool {
	return by.Label == nil && by.Field == nil && by.Transform == nil && len(by.Namespaces) == 0
}
