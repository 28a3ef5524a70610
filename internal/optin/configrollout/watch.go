package configrollout

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/configref"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// Watch watches the metadata of the ConfigMaps and Secrets of each
// namespace where a MyDeployment opts into rollouts on config changes.
//
// It is not part of the manager's cache, and that is the point: the
// manager's RBAC may not grant ConfigMaps or Secrets in every namespace it
// watches (an OLM install scopes the CSV's permissions, an admin may
// withhold Secrets), and controller-runtime waits for every source's cache
// to sync before any controller runs, so one watch the RBAC refuses would
// stall every MyDeployment (issue 33's first try did exactly that). So a
// namespace's two metadata informers start only when a sync of an
// opted-in MyDeployment there first asks for them (Config.Observe), and
// only once SelfSubjectAccessReviews say the manager may get, list and
// watch both kinds there. Only such an answer is a denial: an error while
// asking (a failed create, a lost reply) is asked again after a short
// backoff (optin.TransientRetry), and meanwhile the namespace's syncs read
// the config they reference directly (Config.Read), so no object waits on
// a transient error. While denied, the opted-in objects of that namespace
// say so (ReplicaFailure ConfigAccessDenied) and roll nothing; access is
// asked again at most every Poll, so a grant made later starts the watch
// with no restart. Other objects never read any of this.
//
// State: spaces, keyed by namespace, owned here, kept for the manager's
// life (a namespace costs two watches and the trimmed metadata of its
// ConfigMaps and Secrets, no data). It closes the race between a config
// edit and the sync that reads it: the informer's event enqueues the
// objects that reference what changed, after its store holds the change.
// memo holds the hash of each config version read (see hashMemo).
type Watch struct {
	// Poll is the least time between two access checks of a namespace
	// while access is denied (configPoll; a test may shorten it before
	// the manager starts).
	Poll time.Duration
	// Reviews is the client the access checks are created through (the
	// manager's; a test may inject failures before the manager starts).
	Reviews client.Client

	reader client.Reader // the manager's cache: MyDeployments, with refIndex
	meta   metadata.Interface
	clock  clock.PassiveClock
	log    logr.Logger
	// events enqueues MyDeployments (a channel source of the controller).
	events chan event.GenericEvent
	// everyReplica: every replica reconciles (shards), so each watches.
	everyReplica bool
	memo         hashMemo

	mu     sync.Mutex
	ctx    context.Context // the manager's, once Start runs; nil before
	spaces map[string]*space
}

// space is one namespace's watch.
type space struct {
	state state
	// denied is what the manager may not do there (configDenied).
	denied string
	// asked is when access was last asked (configDenied: asked again
	// after Poll).
	asked time.Time
	// stores are the informers' stores once they have synced (configWatching).
	configMaps, secrets toolscache.Store
}

type state int

const (
	// configStarting: access being asked, or the informers syncing; the
	// syncs of the namespace read what they reference around the cache
	// until the watch enqueues them once it knows.
	configStarting state = iota
	configDenied         // the manager may not read one of the kinds there
	configWatching       // both informers have synced
)

// configPoll is the least time between two access checks of a namespace
// while access is denied.
const configPoll = 15 * time.Second

var (
	_ manager.LeaderElectionRunnable = &Watch{}
	_ optin.Watch                    = &Watch{}
)

func newWatch(env optin.BuildEnv) (*Watch, error) {
	meta, err := metadata.NewForConfig(env.Config)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	return &Watch{Poll: configPoll, Reviews: env.Writer, reader: env.Reader, meta: meta, clock: clock.RealClock{},
		log: env.Log.WithName("config"), events: make(chan event.GenericEvent, 1024), spaces: map[string]*space{},
		everyReplica: env.EveryReplica}, nil
}

// Events implements optin.Watch: the opted-in MyDeployments that read a
// config object that changed, and those of a namespace whose watch
// started or was denied.
func (w *Watch) Events() <-chan event.GenericEvent { return w.events }

// NeedLeaderElection: only a replica that reconciles watches (the
// leader, or every replica with shards).
func (w *Watch) NeedLeaderElection() bool { return !w.everyReplica }

// Start records the manager's context, starts the namespaces asked for
// before it ran, and returns when ctx ends: nothing here stops the manager.
func (w *Watch) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	for ns, sp := range w.spaces {
		go w.start(ctx, ns, sp)
	}
	w.mu.Unlock()
	<-ctx.Done()
	return nil
}

// view is what a sync of an opted-in MyDeployment reads of its
// namespace's watch.
type view struct {
	state  state
	denied string
	stores map[configref.Kind]toolscache.Store
}

// view returns namespace's watch as it is now, starting it if it was
// never asked for, and asking for access again if it was denied more than
// a Poll ago. A nil watch (a reconciler built without one) denies nothing
// and watches nothing: every read goes to the API server.
func (w *Watch) view(namespace string) view {
	if w == nil {
		return view{state: configWatching}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	sp, ok := w.spaces[namespace]
	if !ok {
		sp = &space{state: configStarting}
		w.spaces[namespace] = sp
		if w.ctx != nil {
			go w.start(w.ctx, namespace, sp)
		}
	}
	if sp.state == configDenied && w.clock.Since(sp.asked) >= w.Poll && w.ctx != nil {
		sp.state = configStarting
		go w.start(w.ctx, namespace, sp)
	}
	v := view{state: sp.state, denied: sp.denied}
	if sp.state == configWatching {
		v.stores = map[configref.Kind]toolscache.Store{configref.ConfigMap: sp.configMaps, configref.Secret: sp.secrets}
	}
	return v
}

// start asks for access to namespace and, granted, runs its informers
// until ctx ends; either way the opted-in MyDeployments there are
// enqueued once it knows, to plan with what it found. An error while
// asking is asked again after optin.TransientRetry's backoff, the namespace
// still starting; it returns without a word if ctx ends first.
func (w *Watch) start(ctx context.Context, namespace string, sp *space) {
	denied, ok := w.ask(ctx, namespace)
	if !ok {
		return
	}
	if denied != "" {
		w.mu.Lock()
		first := sp.denied == ""
		sp.state, sp.denied, sp.asked = configDenied, denied, w.clock.Now()
		w.mu.Unlock()
		if first {
			w.log.Info("the manager may not read config in this namespace: rollouts on config changes wait there",
				"namespace", namespace, "denied", denied)
		}
		w.enqueueOptedIn(ctx, namespace)
		return
	}
	configMaps, secrets, err := w.run(ctx, namespace)
	if err != nil {
		return // only the manager's end stops the informers syncing
	}
	w.mu.Lock()
	sp.state, sp.denied, sp.configMaps, sp.secrets = configWatching, "", configMaps, secrets
	w.mu.Unlock()
	w.log.Info("watching ConfigMaps and Secrets (metadata only)", "namespace", namespace)
	w.enqueueOptedIn(ctx, namespace)
}

// ask asks mayRead until it answers, waiting optin.TransientRetry's backoff
// after each error; ok is false when ctx ended first.
func (w *Watch) ask(ctx context.Context, namespace string) (denied string, ok bool) {
	backoff := optin.TransientRetry()
	for tries := 1; ; tries++ {
		answer, err := mayRead(ctx, w.Reviews, namespace)
		if err == nil {
			return answer, true
		}
		log := w.log.V(1)
		if tries == 1 {
			log = w.log
		}
		log.Info("asking for access to config failed; asking again (the namespace's syncs read config directly meanwhile)",
			"namespace", namespace, "tries", tries, "error", err.Error())
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(backoff.Step()):
		}
	}
}

// run starts namespace's two metadata informers and waits for them to sync.
func (w *Watch) run(ctx context.Context, namespace string) (configMaps, secrets toolscache.Store, err error) {
	stores := make([]toolscache.Store, 0, 2)
	var synced []toolscache.InformerSynced
	for _, kind := range []configref.Kind{configref.ConfigMap, configref.Secret} {
		inf := metadatainformer.NewFilteredMetadataInformer(w.meta, resourceOf(kind), namespace, 0,
			toolscache.Indexers{}, nil).Informer()
		if err := inf.SetTransform(trimMetadata); err != nil {
			return nil, nil, fmt.Errorf("%s informer: %w", kind, err)
		}
		changed := func(obj any) { w.changed(ctx, kind, obj) }
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: changed,
			UpdateFunc: func(old, obj any) {
				if metaOf(old) == nil || metaOf(obj) == nil || metaOf(old).ResourceVersion != metaOf(obj).ResourceVersion {
					changed(obj)
				}
			},
			DeleteFunc: changed,
		}); err != nil {
			return nil, nil, fmt.Errorf("%s informer: %w", kind, err)
		}
		go inf.RunWithContext(ctx)
		stores, synced = append(stores, inf.GetStore()), append(synced, inf.HasSynced)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil, nil, fmt.Errorf("config informers of %s: %w", namespace, ctx.Err())
	}
	return stores[0], stores[1], nil
}

// resourceOf is the API resource of a config kind.
func resourceOf(kind configref.Kind) schema.GroupVersionResource {
	if kind == configref.Secret {
		return corev1.SchemeGroupVersion.WithResource("secrets")
	}
	return corev1.SchemeGroupVersion.WithResource("configmaps")
}

// trimMetadata keeps of a ConfigMap's or Secret's metadata only what a
// sync reads: its name, namespace, UID and resourceVersion. Annotations go
// too: kubectl's last-applied-configuration would keep a copy of the data
// in them.
func trimMetadata(in any) (any, error) {
	m, ok := in.(*metav1.PartialObjectMetadata)
	if !ok {
		return in, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp}}, nil
}

// refIndex indexes MyDeployments that opt in by the objects their
// template references: "configmap/NAME" and "secret/NAME" (within the
// object's namespace, which the cache's index adds).
const refIndex = "mydeployment.configRefs"

// Refs is refIndex's function: the references of a MyDeployment that opts
// in, none for others (so a config edit costs them nothing).
func Refs(obj client.Object) []string {
	md, ok := obj.(*appsv1beta1.MyDeployment)
	if !ok {
		return nil
	}
	if spec, _ := Module.Parse(md); spec == nil {
		return nil
	}
	refs := configref.Refs(&md.Spec.Template)
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		out = append(out, ref.String())
	}
	return out
}

// changed enqueues the opted-in MyDeployments of obj's namespace whose
// template references obj (refIndex).
func (w *Watch) changed(ctx context.Context, kind configref.Kind, obj any) {
	m := metaOf(obj)
	if m == nil {
		return
	}
	var list appsv1beta1.MyDeploymentList
	key := configref.Ref{Kind: kind, Name: m.Name}.String()
	if err := w.reader.List(ctx, &list, client.InNamespace(m.Namespace), client.MatchingFields{refIndex: key},
		client.UnsafeDisableDeepCopy); err != nil {
		w.log.Error(err, "listing MyDeployments that read a config object", "object", key, "namespace", m.Namespace)
		return
	}
	for i := range list.Items {
		w.events <- event.GenericEvent{Object: &list.Items[i]}
	}
}

// enqueueOptedIn enqueues the MyDeployments of namespace that opt in.
func (w *Watch) enqueueOptedIn(ctx context.Context, namespace string) {
	var list appsv1beta1.MyDeploymentList
	if err := w.reader.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		w.log.Error(err, "listing the MyDeployments of a namespace", "namespace", namespace)
		return
	}
	for i := range list.Items {
		if spec, _ := Module.Parse(&list.Items[i]); spec != nil {
			w.events <- event.GenericEvent{Object: &list.Items[i]}
		}
	}
}

// metaOf is the metadata an informer event carries, nil for anything else.
func metaOf(obj any) *metav1.PartialObjectMetadata {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, _ := obj.(*metav1.PartialObjectMetadata)
	return m
}

// mayRead asks, with SelfSubjectAccessReviews created through c, whether
// c's user may get, list and watch ConfigMaps and Secrets in namespace,
// and names the first kind it may not read (readDenied). An error is the
// review's: no answer, which is not a denial.
func mayRead(ctx context.Context, c client.Client, namespace string) (string, error) {
	for _, kind := range []configref.Kind{configref.ConfigMap, configref.Secret} {
		resource := resourceOf(kind).Resource
		for _, verb := range []string{"get", "list", "watch"} {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: resource}}}
			if err := c.Create(ctx, review); err != nil {
				return "", fmt.Errorf("asking whether the manager may %s %s in %s: %w", verb, resource, namespace, err)
			}
			if !review.Status.Allowed {
				return readDenied(kind, namespace), nil
			}
		}
	}
	return "", nil
}

// readDenied names what the manager may not do when it may not read a
// config kind in namespace, in the same words whether a review said so or
// a read was refused (so the object's condition and event say it once).
func readDenied(kind configref.Kind, namespace string) string {
	return fmt.Sprintf("read %s in namespace %s", resourceOf(kind).Resource, namespace)
}

// versionKey is a config object's version: (UID, resourceVersion) never
// names two different data, so its hash is never stale.
type versionKey struct {
	uid             types.UID
	resourceVersion string
}

// hashMemo remembers the hash of each config version read, so that a sync
// whose watch shows a version already read reads no data. Entries never go
// stale; the map is emptied when it grows past maxMemo entries. Safe for
// concurrent use (the syncs of many objects).
type hashMemo struct {
	mu     sync.Mutex
	hashes map[versionKey]string
}

const maxMemo = 4096

func (m *hashMemo) get(k versionKey) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.hashes[k]
	return h, ok
}

func (m *hashMemo) put(k versionKey, hash string) {
	if k.uid == "" || k.resourceVersion == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hashes == nil || len(m.hashes) >= maxMemo {
		m.hashes = map[versionKey]string{}
	}
	m.hashes[k] = hash
}
