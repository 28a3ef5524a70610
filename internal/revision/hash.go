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
	"hash/fnv"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
)

// maxNameLen bounds revision names: pods carry the name as the value of the
// controller-revision-hash label, and label values are limited to 63 bytes.
const maxNameLen = validation.LabelValueMaxLength

// Hash returns the hash of a revision's data as history.HashControllerRevision
// computes it: 32-bit FNV-1 (fnv.New32, not FNV-1a, exactly as upstream) over
// data, then over the decimal collisionCount if it is non-nil, with the
// decimal sum encoded by rand.SafeEncodeString.
//
// Promises: deterministic across processes and releases (a change would roll
// every pod); at most 10 bytes, all from [bcdfghjklmnpqrstvwxz2456789], so it
// is a valid label value and DNS label fragment.
func Hash(data []byte, collisionCount *int32) string {
	hf := fnv.New32()
	_, _ = hf.Write(data) // hash.Hash never returns an error
	if collisionCount != nil {
		_, _ = hf.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(hf.Sum32()), 10))
}

// Name returns the revision name "<parent>-<hash>" for a hash from [Hash].
//
// Promises: for any valid object name parent, the result is both a valid DNS
// subdomain (so a valid object name) and a valid label value: parent is cut so
// the whole name fits in 63 bytes (upstream's ControllerRevisionName cuts at
// 253, which breaks the pod label for parents longer than 52 bytes), and
// trailing dots left by the cut are dropped. Distinct long parents may then
// share a name; [Store.Create] resolves that as a hash collision.
func Name(parent, hash string) string {
	if limit := maxNameLen - 1 - len(hash); len(parent) > limit {
		parent = parent[:max(limit, 0)]
	}
	// A '.' before '-' would start a DNS label with '-'.
	parent = strings.TrimRight(parent, ".")
	return parent + "-" + hash
}
