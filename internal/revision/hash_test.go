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
	"cmp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

func TestHashPinned(t *testing.T) {
	// Computed once with an independent FNV-1 + SafeEncodeString implementation;
	// a change here renames every revision and rolls every pod.
	tests := []struct {
		name           string
		data           string
		collisionCount *int32
		want           string
	}{
		{name: "golden data", data: goldenData, want: "bb7c665d5"},
		{name: "empty", data: "", want: "65bb57b6b5"},
		{name: "empty, collision 0", data: "", collisionCount: ptr.To[int32](0), want: "d8bfb7bc"},
		{name: "abc", data: "abc", want: "557874f5f9"},
		{name: "abc, collision 1", data: "abc", collisionCount: ptr.To[int32](1), want: "755d7b7868"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Hash([]byte(tt.data), tt.collisionCount); got != tt.want {
				t.Fatalf("Hash = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHashChanges(t *testing.T) {
	base := Hash([]byte(goldenData), nil)
	tests := []struct {
		name  string
		other string
	}{
		{name: "other data", other: Hash([]byte(goldenData+" "), nil)},
		{name: "collision 0 differs from nil", other: Hash([]byte(goldenData), ptr.To[int32](0))},
		{name: "collision 1", other: Hash([]byte(goldenData), ptr.To[int32](1))},
		{name: "collision 2", other: Hash([]byte(goldenData), ptr.To[int32](2))},
	}
	seen := map[string]string{base: "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if prev, dup := seen[tt.other]; dup {
				t.Fatalf("hash %q equals that of %s", tt.other, prev)
			}
			seen[tt.other] = tt.name
		})
	}
	if again := Hash([]byte(goldenData), nil); again != base {
		t.Fatalf("Hash not stable: %q then %q", base, again)
	}
}

func TestName(t *testing.T) {
	hash := Hash([]byte(goldenData), nil)
	tests := []struct {
		name   string
		parent string
		hash   string // empty: the hash of goldenData
		want   string // empty: only validity is checked
	}{
		{name: "short", parent: "web", want: "web-" + hash},
		{name: "exactly fits", parent: strings.Repeat("a", maxNameLen-1-len(hash)),
			want: strings.Repeat("a", maxNameLen-1-len(hash)) + "-" + hash},
		{name: "one too long", parent: strings.Repeat("a", maxNameLen-len(hash)),
			want: strings.Repeat("a", maxNameLen-1-len(hash)) + "-" + hash},
		{name: "253 bytes", parent: strings.Repeat("b", 253)},
		{name: "cut at a dot", parent: strings.Repeat("a", maxNameLen-2-len(hash)) + "." + strings.Repeat("c", 100)},
		{name: "cut after dots", parent: strings.Repeat("a", 40) + strings.Repeat(".b", 100)},
		{name: "cut at a dash", parent: strings.Repeat("a", maxNameLen-2-len(hash)) + "-" + strings.Repeat("c", 100)},
		{name: "longest possible hash", parent: strings.Repeat("d", 253), hash: "bcdfghjklm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := validation.IsDNS1123Subdomain(tt.parent); len(errs) > 0 {
				t.Fatalf("bad test parent: %v", errs)
			}
			h := cmp.Or(tt.hash, hash)
			got := Name(tt.parent, h)
			if tt.want != "" && got != tt.want {
				t.Fatalf("Name = %q, want %q", got, tt.want)
			}
			if !strings.HasSuffix(got, "-"+h) {
				t.Fatalf("Name = %q lost the hash", got)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Fatalf("Name = %q is not a DNS subdomain: %v", got, errs)
			}
			if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
				t.Fatalf("Name = %q is not a label value: %v", got, errs)
			}
		})
	}
}
