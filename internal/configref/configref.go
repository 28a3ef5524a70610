// Package configref lists the ConfigMaps and Secrets a pod template reads,
// and encodes the hashes of their data as one annotation value. It is pure:
// the controller reads the objects and hands their data in.
package configref

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Kind is the kind of a referenced object, as it appears in the encoding.
type Kind string

const (
	ConfigMap Kind = "configmap"
	Secret    Kind = "secret"
)

// Ref is one ConfigMap or Secret a pod template reads, in its namespace.
type Ref struct {
	Kind Kind
	Name string
	// Optional: every reference to it says optional: true, so a pod starts
	// without it (a missing object then counts as empty data).
	Optional bool
}

// String is "kind/name", as the encoding and the plugin's history name it.
func (r Ref) String() string { return string(r.Kind) + "/" + r.Name }

// Refs lists the ConfigMaps and Secrets template reads: volumes (configMap,
// secret, and projected sources), and in containers and init containers
// envFrom and env[].valueFrom (configMapKeyRef, secretKeyRef). Not
// imagePullSecrets (the kubelet reads them to pull, not the container),
// and not ephemeral containers (a pod template cannot have any).
//
// Promises: sorted by kind then name, each object once; Optional only if
// every reference to the object is optional (one required reference keeps
// the pod from starting without it). A nil template lists nothing.
func Refs(template *corev1.PodTemplateSpec) []Ref {
	if template == nil {
		return nil
	}
	seen := map[Ref]bool{} // key with Optional false; value: all optional so far
	add := func(kind Kind, name string, optional *bool) {
		if name == "" {
			return
		}
		k := Ref{Kind: kind, Name: name}
		opt := optional != nil && *optional
		if prev, ok := seen[k]; ok {
			seen[k] = prev && opt
			return
		}
		seen[k] = opt
	}
	for _, v := range template.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add(ConfigMap, v.ConfigMap.Name, v.ConfigMap.Optional)
		case v.Secret != nil:
			add(Secret, v.Secret.SecretName, v.Secret.Optional)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					add(ConfigMap, src.ConfigMap.Name, src.ConfigMap.Optional)
				}
				if src.Secret != nil {
					add(Secret, src.Secret.Name, src.Secret.Optional)
				}
			}
		}
	}
	for _, c := range slices.Concat(template.Spec.InitContainers, template.Spec.Containers) {
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil {
				add(ConfigMap, from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
			}
			if from.SecretRef != nil {
				add(Secret, from.SecretRef.Name, from.SecretRef.Optional)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
				add(ConfigMap, ref.Name, ref.Optional)
			}
			if ref := e.ValueFrom.SecretKeyRef; ref != nil {
				add(Secret, ref.Name, ref.Optional)
			}
		}
	}
	out := make([]Ref, 0, len(seen))
	for k, opt := range seen {
		k.Optional = opt
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// HashData is the hash of an object's data and binaryData: the SHA-256 of
// each key, in sorted order, with its value, the two maps kept apart, cut
// to 16 hex digits. Labels and annotations are not in it, so an edit of
// them changes nothing. Empty (or missing and optional) data hashes as
// HashData(nil, nil).
func HashData(data map[string]string, binaryData map[string][]byte) string {
	h := sha256.New()
	write := func(s string) {
		// Length-prefixed, so no two different maps write the same bytes.
		var n [8]byte
		l := uint64(len(s))
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, k := range sortedKeys(data) {
		write(k)
		write(data[k])
	}
	h.Write([]byte{0xff}) // the boundary between data and binaryData
	for _, k := range sortedKeys(binaryData) {
		write(k)
		write(string(binaryData[k]))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Hashed is a reference with the hash of its object's data.
type Hashed struct {
	Ref
	Hash string
}

// Encode is the annotation value for hashed: "kind/name=hash" joined by
// ",", in the order given ([Refs]' order, so the value is stable).
func Encode(hashed []Hashed) string {
	parts := make([]string, 0, len(hashed))
	for _, h := range hashed {
		parts = append(parts, h.String()+"="+h.Hash)
	}
	return strings.Join(parts, ",")
}

// Decode is the inverse of [Encode]: "kind/name" to hash. Parts it cannot
// read are skipped (the annotation is ours, but a revision may have been
// written by hand).
func Decode(value string) map[string]string {
	out := map[string]string{}
	if value == "" {
		return out
	}
	for _, part := range strings.Split(value, ",") {
		if ref, hash, ok := strings.Cut(part, "="); ok {
			out[ref] = hash
		}
	}
	return out
}

// Changed names what differs from before to after (two [Encode] values):
// each "kind/name" whose hash changed, that came or that went, sorted.
func Changed(before, after string) []string {
	b, a := Decode(before), Decode(after)
	var out []string
	for ref, h := range a {
		if b[ref] != h {
			out = append(out, ref)
		}
	}
	for ref := range b {
		if _, ok := a[ref]; !ok {
			out = append(out, ref)
		}
	}
	slices.Sort(out)
	return out
}

// WithHash returns a copy of template carrying value (an [Encode] result) as
// its ConfigHashAnnotation: the template a revision records, so a change of
// the data is a change of the revision. template itself is not modified
// (it is the object's spec, which must not say what only the revision says).
func WithHash(template *corev1.PodTemplateSpec, value string) *corev1.PodTemplateSpec {
	out := template.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[appsv1beta1.ConfigHashAnnotation] = value
	return out
}

// Without returns template without its ConfigHashAnnotation: a copy if it
// had one (what rollout undo writes back to the spec), else template.
func Without(template *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	if _, ok := template.Annotations[appsv1beta1.ConfigHashAnnotation]; !ok {
		return template
	}
	out := template.DeepCopy()
	delete(out.Annotations, appsv1beta1.ConfigHashAnnotation)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out
}
