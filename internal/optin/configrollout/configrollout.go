// Package configrollout is the config-rollout opt-in
// (RolloutOnConfigChangeAnnotation "true"): the data of the ConfigMaps and
// Secrets the pod template references is part of the revision, so an edit
// of one rolls the pods out as a template change does. The module watches
// the metadata of those objects (Watch: a namespace's informers started
// once an opted-in object there asks, and only where the manager may read
// them), reads and hashes their data once the sync's cache has caught up
// (Read), puts the hashes into the template the update revision records
// (revision.Contributor), and holds the revision while a referenced object
// is missing or may not be read (ReplicaFailure ConfigMissing,
// ConfigAccessDenied).
package configrollout

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/configref"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch

// Name is the module's name in an optin.Set.
const Name = "rollout-on-config-change"

// Module is the config-rollout module.
var Module optin.Builder = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string { return []string{appsv1beta1.RolloutOnConfigChangeAnnotation} }

// Parse reads RolloutOnConfigChangeAnnotation: "true" opts in, "false"
// does not, any other value is refused. Either strategy may opt in.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	if on, errs := optin.ParseSwitch(md, appsv1beta1.RolloutOnConfigChangeAnnotation); !on {
		return nil, errs
	}
	return &Config{namespace: md.Namespace}, nil
}

// Build implements optin.Builder: the module's part is the config watch (Watch), and the index
// of MyDeployments by the config they read that its events use.
func (module) Build(ctx context.Context, env optin.BuildEnv) (optin.Part, error) {
	if err := env.Indexer.IndexField(ctx, &appsv1beta1.MyDeployment{}, refIndex, Refs); err != nil {
		return nil, fmt.Errorf("indexing MyDeployments by the config they read: %w", err)
	}
	return newWatch(env)
}

// Config is the Spec of an object that opts in. Observed, it holds its
// namespace's watch as it is now; read, what the update revision records
// (value) or why none can be recorded (hold).
type Config struct {
	namespace string
	view      view
	watch     *Watch // nil: a reconciler built without one
	// value is the hashes of the config the template references, as the
	// revision records them (configref.Encode; "" if it references none).
	value string
	// hold says why no revision can be recorded now.
	hold *status.Failure
}

// Module implements optin.Spec.
func (*Config) Module() string { return Name }

// On says s opts into rollouts on config changes.
func On(s optin.Set) bool {
	_, ok := optin.Get[*Config](s, Name)
	return ok
}

// Observe implements optin.Observer: the namespace's watch as it is now,
// started if it was never asked for. While it starts, Read reads what the
// template references around the cache, and the watch enqueues the object
// again once it knows.
func (c *Config) Observe(p optin.Part) optin.Spec {
	cw, _ := p.(*Watch)
	return &Config{namespace: c.namespace, watch: cw, view: cw.view(c.namespace)}
}

// Read implements optin.Reader: on a sync that may record a revision, the
// hashes of the config md's template references, or why no revision can
// be recorded now: a referenced object that does not exist and is not
// optional, or access to the config of md's namespace denied to the
// manager, as the watch's access check or the API server's refusal of a
// read says (the same words: readDenied).
func (c *Config) Read(ctx context.Context, md *appsv1beta1.MyDeployment, env optin.ReadEnv) (optin.Spec, error) {
	if !env.RecordsRevision {
		return c, nil
	}
	out := *c
	if c.view.state == configDenied {
		out.hold = &status.Failure{Reason: appsv1beta1.ReasonConfigAccessDenied, Message: deniedMessage(c.view.denied)}
		return &out, nil
	}
	refs := configref.Refs(&md.Spec.Template)
	hashed := make([]configref.Hashed, 0, len(refs))
	var missing []string
	for _, ref := range refs {
		h, gone, err := c.hash(ctx, env.APIReader, ref)
		if apierrors.IsForbidden(err) {
			out.hold = &status.Failure{Reason: appsv1beta1.ReasonConfigAccessDenied,
				Message: deniedMessage(readDenied(ref.Kind, c.namespace))}
			return &out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("syncing revisions: %w", err)
		}
		if gone && !ref.Optional {
			missing = append(missing, ref.String())
		}
		hashed = append(hashed, configref.Hashed{Ref: ref, Hash: h})
	}
	if len(missing) > 0 {
		logf.FromContext(ctx).V(1).Info("referenced config missing", "object", klog.KObj(md), "missing", missing)
		out.hold = &status.Failure{Reason: appsv1beta1.ReasonConfigMissing, Message: missingMessage(missing)}
		return &out, nil
	}
	out.value = configref.Encode(hashed)
	return &out, nil
}

// hash returns the hash of the data of the object ref names: from the
// watch's memo when its metadata shows a version the memo holds, else read
// around the cache (the data is hashed and dropped). gone: the object does
// not exist (the hash is then of empty data). Without a watch's stores
// (none, or still starting) the version is read from the API server.
func (c *Config) hash(ctx context.Context, api client.Reader, ref configref.Ref) (hash string, gone bool, err error) {
	key := types.NamespacedName{Namespace: c.namespace, Name: ref.Name}
	if store := c.view.stores[ref.Kind]; store != nil {
		item, ok, err := store.GetByKey(key.String())
		if err != nil {
			return "", false, fmt.Errorf("reading %s: %w", ref, err)
		}
		if !ok {
			return configref.HashData(nil, nil), true, nil
		}
		if m := metaOf(item); m != nil {
			if h, ok := c.watch.memo.get(versionKey{m.UID, m.ResourceVersion}); ok {
				return h, false, nil
			}
		}
	}
	var (
		obj       client.Object
		hashOfObj func() string
	)
	switch ref.Kind {
	case configref.ConfigMap:
		cm := &corev1.ConfigMap{}
		obj, hashOfObj = cm, func() string { return configref.HashData(cm.Data, cm.BinaryData) }
	default:
		s := &corev1.Secret{}
		obj, hashOfObj = s, func() string { return configref.HashData(nil, s.Data) }
	}
	if err := api.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return configref.HashData(nil, nil), true, nil
		}
		return "", false, fmt.Errorf("reading %s: %w", ref, err)
	}
	hash = hashOfObj()
	if c.watch != nil {
		c.watch.memo.put(versionKey{obj.GetUID(), obj.GetResourceVersion()}, hash)
	}
	return hash, false, nil
}

// RevisionInput implements revision.Contributor: the template carries the
// hashes Read found (configref.WithHash; nothing referenced: the template
// as it is), or the revision is held while Read found a hold; while
// access is denied, the object is looked at again once the watch asks
// for access again (nothing else syncs it when a grant appears).
func (c *Config) RevisionInput(in *revision.Input) {
	switch {
	case c.hold != nil:
		in.Held = true
		if c.hold.Reason == appsv1beta1.ReasonConfigAccessDenied && c.watch != nil {
			in.RetryAfter = c.watch.Poll
		}
	case c.value != "":
		in.Template, in.Key = configref.WithHash(in.Template, c.value), c.value
	}
}

// ReportInput implements status.Reporter: while the revision is held, the
// spec's generation is not rolled out, so it is not observed (no status may
// call it available), and with no other failure to report ReplicaFailure
// says why.
func (c *Config) ReportInput(in *status.Input) {
	if c.hold == nil {
		return
	}
	in.Synced = false
	if in.Failure == nil {
		in.Failure = c.hold
	}
}

// deniedMessage is the ReplicaFailure message while the manager may not
// read the config of an opted-in object's namespace.
func deniedMessage(denied string) string {
	return fmt.Sprintf("%s: the manager may not %s, so it cannot see config changes "+
		"(grant it get, list and watch of ConfigMaps and Secrets there); no new revision until it may",
		appsv1beta1.RolloutOnConfigChangeAnnotation, denied)
}

// missingMessage is the ReplicaFailure message for missing objects.
func missingMessage(missing []string) string {
	return fmt.Sprintf("the pod template references %s, which does not exist and is not optional: "+
		"no new revision until it does", strings.Join(missing, ", "))
}

var (
	_ optin.Observer       = (*Config)(nil)
	_ optin.Reader         = (*Config)(nil)
	_ revision.Contributor = (*Config)(nil)
	_ status.Reporter      = (*Config)(nil)
)
