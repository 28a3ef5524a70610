package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/configref"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/configrollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// A rollout on a config change (RolloutOnConfigChangeAnnotation): the
// ConfigMaps and Secrets a template references are watched as metadata
// only (no data in memory), and each is read around the cache, hashed and
// dropped when its (UID, resourceVersion) has no hash in the memo yet.

// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch

// configRefIndex indexes MyDeployments that opt in by the objects their
// template references: "configmap/NAME" and "secret/NAME" (within the
// object's namespace, which the cache's index adds).
const configRefIndex = "mydeployment.configRefs"

// configRefs is configRefIndex's function: the references of an opted-in
// MyDeployment, none for others (so a config edit costs them nothing).
func configRefs(obj client.Object) []string {
	md, ok := obj.(*appsv1beta1.MyDeployment)
	if !ok {
		return nil
	}
	if o, errs := modules.Parse(md); len(errs) > 0 || !configrollout.On(o) {
		return nil
	}
	refs := configref.Refs(&md.Spec.Template)
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		out = append(out, ref.String())
	}
	return out
}

// trimConfigMetadata keeps of a ConfigMap's or Secret's metadata only what
// a sync reads: its name, namespace, UID and resourceVersion. Annotations
// go too: kubectl's last-applied-configuration would keep a copy of the
// data in them.
func trimConfigMetadata(in any) (any, error) {
	m, ok := in.(*metav1.PartialObjectMetadata)
	if !ok {
		return in, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp}}, nil
}

// configHashKey is a config object's version: (UID, resourceVersion) never
// names two different data, so its hash is never stale.
type configHashKey struct {
	uid             types.UID
	resourceVersion string
}

// configHash returns the hash of the data of the object ref names in
// namespace: from the memo when the watch's metadata shows a version it
// holds, else read around the cache (the data is hashed and dropped).
// missing: the object does not exist (the hash is then of empty data).
// Without a watch (view.stores nil) the version is read from the API server.
func (r *MyDeploymentReconciler) configHash(ctx context.Context, view configView, namespace string,
	ref configref.Ref) (hash string, missing bool, err error) {
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	if store := view.stores[ref.Kind]; store != nil {
		item, ok, err := store.GetByKey(key.String())
		if err != nil {
			return "", false, fmt.Errorf("reading %s: %w", ref, err)
		}
		if !ok {
			return configref.HashData(nil, nil), true, nil
		}
		if m := metaOf(item); m != nil {
			if h, ok := r.inPlace.configHash(configHashKey{m.UID, m.ResourceVersion}); ok {
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
	if err := r.APIReader.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return configref.HashData(nil, nil), true, nil
		}
		return "", false, fmt.Errorf("reading %s: %w", ref, err)
	}
	hash = hashOfObj()
	r.inPlace.rememberConfigHash(configHashKey{obj.GetUID(), obj.GetResourceVersion()}, hash)
	return hash, false, nil
}

// configOf returns md's template as its revision records it when md opts
// into rollouts on config changes: the value carrying the hashes of what
// it references (configref.Encode; "" if it references nothing). hold
// says why no revision can be recorded now (no value is returned): a
// referenced object that does not exist and is not optional, or access to
// the config of md's namespace denied to the manager, as the watch's
// access check or the API server's refusal of a read says (the same
// words: readDenied). While the namespace's watch starts (view.stores
// nil), what md references is read around the cache: a new object waits
// for no watch.
func (r *MyDeploymentReconciler) configOf(ctx context.Context, view configView, md *appsv1beta1.MyDeployment) (value string, hold *status.Failure, err error) {
	if view.state == configDenied {
		return "", &status.Failure{Reason: appsv1beta1.ReasonConfigAccessDenied, Message: configDeniedMessage(view.denied)}, nil
	}
	refs := configref.Refs(&md.Spec.Template)
	hashed := make([]configref.Hashed, 0, len(refs))
	var missing []string
	for _, ref := range refs {
		h, gone, err := r.configHash(ctx, view, md.Namespace, ref)
		if apierrors.IsForbidden(err) {
			denied := readDenied(ref.Kind, md.Namespace)
			return "", &status.Failure{Reason: appsv1beta1.ReasonConfigAccessDenied, Message: configDeniedMessage(denied)}, nil
		}
		if err != nil {
			return "", nil, err
		}
		if gone && !ref.Optional {
			missing = append(missing, ref.String())
		}
		hashed = append(hashed, configref.Hashed{Ref: ref, Hash: h})
	}
	if len(missing) > 0 {
		logf.FromContext(ctx).V(1).Info("referenced config missing", "object", klog.KObj(md), "missing", missing)
		return "", &status.Failure{Reason: appsv1beta1.ReasonConfigMissing, Message: configMissingMessage(missing)}, nil
	}
	return configref.Encode(hashed), nil, nil
}

// configDeniedMessage is the ReplicaFailure message while the manager may
// not read the config of an opted-in object's namespace.
func configDeniedMessage(denied string) string {
	return fmt.Sprintf("%s: the manager may not %s, so it cannot see config changes "+
		"(grant it get, list and watch of ConfigMaps and Secrets there); no new revision until it may",
		appsv1beta1.RolloutOnConfigChangeAnnotation, denied)
}

// configMissingMessage is the ReplicaFailure message for missing objects.
func configMissingMessage(missing []string) string {
	return fmt.Sprintf("the pod template references %s, which does not exist and is not optional: "+
		"no new revision until it does", strings.Join(missing, ", "))
}

// configHash is the remembered hash of a config object's version.
func (m *inPlaceMemo) configHash(k configHashKey) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.configs[k]
	return h, ok
}

// rememberConfigHash remembers the hash of a config object's version.
func (m *inPlaceMemo) rememberConfigHash(k configHashKey, hash string) {
	if k.uid == "" || k.resourceVersion == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.configs == nil || len(m.configs) >= maxInPlaceMemo {
		m.configs = map[configHashKey]string{}
	}
	m.configs[k] = hash
}
