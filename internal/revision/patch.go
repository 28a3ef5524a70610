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
	"encoding/json"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// ErrInvalidData is wrapped by the errors of [Template] when a revision's data
// does not hold a pod template as [Patch] writes it.
var ErrInvalidData = errors.New("revision data does not hold a pod template")

// revisionData is the typed view of the JSON that [Patch] writes; the
// "$patch" directive is an unknown field here and is ignored on decode.
type revisionData struct {
	Spec struct {
		Template *corev1.PodTemplateSpec `json:"template"`
	} `json:"spec"`
}

// Patch returns the data to store in a ControllerRevision for template: the
// JSON {"spec":{"template":{"$patch":"replace",...}}}, byte for byte what
// StatefulSet's getPatch builds for the same template (keys sorted, compact).
//
// Promises: the result is deterministic for a given template, so it can be
// hashed and compared; [Template] decodes it back to a semantically equal
// template. Unlike getPatch, integers beyond 2^53 are kept exactly (numbers are
// never routed through float64). It errors only for a nil template or if JSON
// encoding fails.
func Patch(template *corev1.PodTemplateSpec) ([]byte, error) {
	if template == nil {
		return nil, errors.New("building revision data: nil pod template")
	}
	raw, err := json.Marshal(template)
	if err != nil {
		return nil, fmt.Errorf("encoding pod template: %w", err)
	}
	// Going through a map sorts the keys, as getPatch's re-marshal does.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tmpl map[string]any
	if err := dec.Decode(&tmpl); err != nil {
		return nil, fmt.Errorf("re-decoding pod template: %w", err)
	}
	tmpl["$patch"] = "replace"
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
	if err != nil {
		return nil, fmt.Errorf("encoding revision data: %w", err)
	}
	return data, nil
}

// Template decodes the pod template stored in rev's data: the inverse of
// [Patch], used to run pods of an older revision (rollback, partitions) and to
// learn the current revision's template.
//
// Promises: the result is a fresh object that shares nothing with rev. It
// errors (wrapping [ErrInvalidData]) for a nil rev, empty data, data that is
// not JSON, or JSON without an object at spec.template.
func Template(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	if rev == nil {
		return nil, fmt.Errorf("%w: nil revision", ErrInvalidData)
	}
	raw, err := dataOf(rev)
	if err != nil {
		return nil, err
	}
	var d revisionData
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%w: revision %q: %w", ErrInvalidData, rev.Name, err)
	}
	if d.Spec.Template == nil {
		return nil, fmt.Errorf("%w: revision %q has no spec.template", ErrInvalidData, rev.Name)
	}
	return d.Spec.Template, nil
}

// dataOf returns rev's data as JSON, whether it was read from the API (Raw)
// or built in memory (Object).
func dataOf(rev *appsv1.ControllerRevision) ([]byte, error) {
	if len(rev.Data.Raw) > 0 {
		return rev.Data.Raw, nil
	}
	if rev.Data.Object != nil {
		raw, err := json.Marshal(rev.Data.Object)
		if err != nil {
			return nil, fmt.Errorf("%w: revision %q: %w", ErrInvalidData, rev.Name, err)
		}
		return raw, nil
	}
	return nil, fmt.Errorf("%w: revision %q has empty data", ErrInvalidData, rev.Name)
}
