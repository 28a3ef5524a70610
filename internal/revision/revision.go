/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package revision

import (
	"bytes"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// HashLabel is set on every revision to its data's [Hash]
	// (history.ControllerRevisionHashLabel).
	HashLabel = "controller.kubernetes.io/hash"
	// PodRevisionLabel is the pod label whose value is the name of the
	// revision the pod was created from.
	PodRevisionLabel = appsv1.ControllerRevisionHashLabelKey
)

// ErrInvalidOwner is wrapped by the errors of [New] and [Store.Sync] when the
// [Owner] cannot be recorded; retrying will not help until its spec changes.
var ErrInvalidOwner = errors.New("invalid revision owner")

// Owner describes the object whose pod template history is recorded, so this
// package does not depend on our API types.
type Owner struct {
	// Object is the owner itself; its name, namespace and UID are used.
	Object metav1.Object
	// GVK is the owner's kind, for the controller ownerReference.
	GVK schema.GroupVersionKind
	// Selector is the owner's pod selector; revisions are labelled so it
	// selects them. nil selects nothing and is rejected.
	Selector *metav1.LabelSelector
	// Template is the pod template to record.
	Template *corev1.PodTemplateSpec
	// Data, if set, is [Patch](Template), computed earlier (the controller keeps it per generation);
	// nil computes it.
	Data []byte
	// Annotations are copied onto a revision when it is created (for example
	// kubernetes.io/change-cause, which rollout history shows); they are not
	// part of its data, so they never make two revisions differ.
	Annotations map[string]string
}

// New builds, without creating it, the revision of owner's template numbered
// revision, named with collisionCount as [Store.Create] names it (never the
// nil-probe hash, so New and Create always agree on the name).
//
// Promises: the result has the owner's namespace; a single ownerReference to
// owner with controller=true and blockOwnerDeletion=true; Data.Raw =
// [Patch] of the template; labels = those template labels whose keys the
// selector uses, plus [HashLabel]; name [Name](owner name, hash). Labels are
// checked to be selected by owner's selector, so [Store.List] finds the
// revision. Errors wrap [ErrInvalidOwner] for a nil object or template, an
// invalid selector, or a template whose labels the selector does not match.
func New(owner Owner, revision int64, collisionCount int32) (*appsv1.ControllerRevision, error) {
	if owner.Object == nil || owner.Template == nil {
		return nil, fmt.Errorf("%w: object and template are required", ErrInvalidOwner)
	}
	sel, err := metav1.LabelSelectorAsSelector(owner.Selector)
	if err != nil {
		return nil, fmt.Errorf("%w: selector of %s: %w", ErrInvalidOwner, owner.Object.GetName(), err)
	}
	// A copy of given data: it is shared (the controller keeps it per generation), and decoding a
	// response into the revision may reuse Data.Raw's array.
	data := bytes.Clone(owner.Data)
	if data == nil {
		if data, err = Patch(owner.Template); err != nil {
			return nil, err
		}
	}
	hash := Hash(data, &collisionCount)
	revLabels := selectedLabels(sel, owner.Template.Labels)
	revLabels[HashLabel] = hash
	if !sel.Matches(labels.Set(revLabels)) {
		return nil, fmt.Errorf("%w: selector %q of %s does not match its template labels",
			ErrInvalidOwner, sel, owner.Object.GetName())
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            Name(owner.Object.GetName(), hash),
			Namespace:       owner.Object.GetNamespace(),
			Labels:          revLabels,
			Annotations:     maps.Clone(owner.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner.Object, owner.GVK)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: revision,
	}, nil
}

// selectedLabels returns a new map of the template labels whose keys sel uses.
func selectedLabels(sel labels.Selector, templateLabels map[string]string) map[string]string {
	out := map[string]string{}
	reqs, _ := sel.Requirements() // not selectable: Nothing, caught by Matches
	for _, r := range reqs {
		if v, ok := templateLabels[r.Key()]; ok {
			out[r.Key()] = v
		}
	}
	return out
}

// Equal reports whether a and b record the same pod template: both nil, or
// both non-nil with byte-equal data or data that decode (see [Template]) to
// semantically equal templates. The semantic fallback keeps a template that was
// serialized differently (another library version, another writer) from
// looking like a new version and rolling every pod.
func Equal(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	ra, _ := dataOf(a) // nil on error: two empty revisions are equal, as upstream
	rb, _ := dataOf(b)
	if bytes.Equal(ra, rb) {
		return true
	}
	ta, errA := Template(a)
	tb, errB := Template(b)
	return errA == nil && errB == nil && apiequality.Semantic.DeepEqual(ta, tb)
}

// controlledBy reports whether rev's controller ownerReference has uid.
func controlledBy(rev *appsv1.ControllerRevision, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(rev)
	return ref != nil && ref.UID == uid
}
