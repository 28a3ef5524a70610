package application

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Server-side apply with ForceOwnership takes back every field the
// Application sets that someone else changed, but it never removes what
// another field manager added: a Service port edited from 80 to 81 with
// kubectl patch is a new item of the ports list (keyed by port and
// protocol) owned by kubectl; applying 80 again would put it beside 81, and
// the API server refuses that when both are named http, so 81 stayed. So
// the items another manager added to a list under spec that the
// Application fills are removed (foreignItems), before applying again when
// the API server refused the apply, and after each apply. Lists the
// Application does not fill (or fills as one atomic value, which apply
// takes back whole), maps, and every other field someone else sets
// (metadata: their labels and annotations; status) are left alone.

// foreignItem is a list item of obj to remove: its JSON pointer and its value
// (tested before the removal, so that a concurrent change fails the patch).
type foreignItem struct {
	tokens []string
	value  any
	// key names the item in its list (a key, a value or an index).
	key fieldpath.PathElement
}

// foreignItems lists the items of lists under obj's spec that a field
// manager other than manager applying owns (manager's own non-apply writes
// count as another's: they must not keep an item alive), in a list that desired (what manager
// applies) fills, and that desired does not have and manager does not own.
// They come in an order in which they can be removed one after the other
// (an item before its preceding siblings and their ancestors).
func foreignItems(obj *unstructured.Unstructured, desired map[string]any, manager string) ([]foreignItem, error) {
	ours := &fieldpath.Set{}
	var theirs []*fieldpath.Set
	for _, mf := range obj.GetManagedFields() {
		if mf.FieldsV1 == nil || mf.Subresource != "" {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
			return nil, fmt.Errorf("reading the fields of manager %s: %w", mf.Manager, err)
		}
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply {
			ours = ours.Union(s)
		} else {
			theirs = append(theirs, s)
		}
	}
	spec := fieldpath.FieldNameElement("spec")
	seen := map[string]bool{}
	var items []foreignItem
	for _, s := range theirs {
		for p := range s.WithPrefix(spec).All() {
			item, ok := firstForeignItem(ours, desired, append(fieldpath.Path{spec}, p...))
			if !ok || seen[item.String()] {
				continue
			}
			seen[item.String()] = true
			if tokens, v, ok := locate(obj.Object, item); ok {
				items = append(items, foreignItem{tokens: tokens, value: v, key: item[len(item)-1]})
			}
		}
	}
	slices.SortFunc(items, func(a, b foreignItem) int { return -compareTokens(a.tokens, b.tokens) })
	return items, nil
}

// firstForeignItem is the shortest prefix of p that ends in a list item
// which ours owns nothing of and desired does not have, in a list desired
// has items in.
func firstForeignItem(ours *fieldpath.Set, desired map[string]any, p fieldpath.Path) (fieldpath.Path, bool) {
	for i := 1; i < len(p); i++ {
		if p[i].FieldName != nil {
			continue
		}
		_, list, ok := locate(desired, p[:i])
		if l, isList := list.([]any); !ok || !isList || len(l) == 0 {
			return nil, false // a list the Application does not fill
		}
		if !slices.ContainsFunc(list.([]any), func(item any) bool { return matches(p[i], item) }) &&
			!ours.Has(p[:i+1]) && under(ours, p[:i+1]).Empty() {
			return p[:i+1], true
		}
	}
	return nil, false
}

// under is the part of s below path p.
func under(s *fieldpath.Set, p fieldpath.Path) *fieldpath.Set {
	for _, pe := range p {
		s = s.WithPrefix(pe)
	}
	return s
}

// locate finds the element p names in obj: its JSON pointer tokens and its
// value; false if obj does not have it (any more).
func locate(obj map[string]any, p fieldpath.Path) ([]string, any, bool) {
	var cur any = obj
	var tokens []string
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, nil, false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return nil, nil, false
			}
			tokens = append(tokens, *pe.FieldName)
		default:
			list, ok := cur.([]any)
			if !ok {
				return nil, nil, false
			}
			i := slices.IndexFunc(list, func(item any) bool { return matches(pe, item) })
			if pe.Index != nil {
				i = *pe.Index
			}
			if i < 0 || i >= len(list) {
				return nil, nil, false
			}
			cur = list[i]
			tokens = append(tokens, strconv.Itoa(i))
		}
	}
	return tokens, cur, true
}

// matches: a list item is the one a key or value path element names.
func matches(pe fieldpath.PathElement, item any) bool {
	switch {
	case pe.Key != nil:
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			v, ok := m[f.Name]
			if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
				return false
			}
		}
		return true
	case pe.Value != nil:
		return value.Equals(value.NewValueInterface(item), *pe.Value)
	}
	return false
}

// compareTokens orders JSON pointers token by token, list indices as
// numbers.
func compareTokens(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		x, errX := strconv.Atoi(a[i])
		y, errY := strconv.Atoi(b[i])
		if errX == nil && errY == nil {
			return x - y
		}
		return strings.Compare(a[i], b[i])
	}
	return len(a) - len(b)
}

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// pointer is the JSON pointer (RFC 6901) of tokens.
func pointer(tokens []string) string {
	r := strings.NewReplacer("~", "~0", "/", "~1")
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + r.Replace(t))
	}
	return b.String()
}

// removalPatch is a JSON patch that tests each item, appends the adds, then
// removes the items in order (appending first moves no item a removal
// names).
func removalPatch(items []foreignItem, adds []jsonPatchOp) ([]byte, error) {
	var ops []jsonPatchOp
	for _, it := range items {
		ops = append(ops, jsonPatchOp{Op: "test", Path: pointer(it.tokens), Value: it.value})
	}
	ops = append(ops, adds...)
	for _, it := range items {
		ops = append(ops, jsonPatchOp{Op: "remove", Path: pointer(it.tokens)})
	}
	return json.Marshal(ops)
}

// missingItems are the operations that append to obj's lists the items of
// desired's that the foreign items' lists lack, so that removing the
// foreign items never leaves a list the API server requires empty (a
// Service's ports). An item of desired is there when an item of obj's
// list has the same values for the key fields desired's item has (a key
// field left to its default, such as a port's protocol, is not compared).
// Only lists keyed by fields are completed.
func missingItems(obj *unstructured.Unstructured, desired map[string]any, items []foreignItem) []jsonPatchOp {
	var ops []jsonPatchOp
	done := map[string]bool{}
	for _, it := range items {
		parent := it.tokens[:len(it.tokens)-1]
		if it.key.Key == nil || done[pointer(parent)] {
			continue
		}
		done[pointer(parent)] = true
		live, _ := walk(obj.Object, parent).([]any)
		want, _ := walkPath(desired, parent, obj.Object).([]any)
		for _, d := range want {
			dm, ok := d.(map[string]any)
			if !ok {
				continue
			}
			present := slices.ContainsFunc(live, func(l any) bool {
				lm, ok := l.(map[string]any)
				if !ok {
					return false
				}
				for _, f := range *it.key.Key {
					if dv, ok := dm[f.Name]; ok && !value.Equals(value.NewValueInterface(dv), value.NewValueInterface(lm[f.Name])) {
						return false
					}
				}
				return true
			})
			if !present {
				ops = append(ops, jsonPatchOp{Op: "add", Path: pointer(parent) + "/-", Value: d})
			}
		}
	}
	return ops
}

// walk follows JSON pointer tokens in obj; nil where there is nothing.
func walk(obj any, tokens []string) any {
	cur := obj
	for _, t := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// walkPath follows in desired the path tokens name in live: field names as
// they are, list indices by the item of live they point to, found in
// desired by equal name (lists under spec the Application fills are keyed by
// name, or are the top-level lists such as ports). nil where desired has
// nothing there.
func walkPath(desired any, tokens []string, live any) any {
	cur, l := desired, live
	for _, t := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			cur, l = c[t], walk(l, []string{t})
		case []any:
			li := walk(l, []string{t})
			lm, _ := li.(map[string]any)
			name := lm["name"]
			i := slices.IndexFunc(c, func(x any) bool { m, ok := x.(map[string]any); return ok && name != nil && m["name"] == name })
			if i < 0 {
				return nil
			}
			cur, l = c[i], li
		default:
			return nil
		}
	}
	return cur
}

// removeForeignItems removes from u the list items another field manager
// added to the lists under its spec that desired fills (see foreignItems),
// with one JSON patch that tests each first; u becomes the patched object.
// It reports whether it removed any; nothing to remove: no request.
func (r *Reconciler) removeForeignItems(ctx context.Context, u *unstructured.Unstructured, desired client.Object) (bool, error) {
	return r.replaceForeignItems(ctx, u, desired, false)
}

// replaceForeignItems is removeForeignItems that, with complete, also
// appends desired's items missing from those lists (see missingItems).
func (r *Reconciler) replaceForeignItems(ctx context.Context, u *unstructured.Unstructured, desired client.Object, complete bool) (bool, error) {
	want, err := applyObject(r.Scheme(), desired)
	if err != nil {
		return false, err
	}
	items, err := foreignItems(u, want.Object, FieldManager)
	if err != nil || len(items) == 0 {
		return false, err
	}
	var adds []jsonPatchOp
	if complete {
		adds = missingItems(u, want.Object, items)
	}
	patch, err := removalPatch(items, adds)
	if err != nil {
		return false, err
	}
	if err := r.Client.Patch(ctx, u, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		return false, fmt.Errorf("removing what another field manager added: %w", err)
	}
	return true, nil
}

// repairLive is replaceForeignItems, completing the lists, on the child as
// the API server has it (the cache strips managedFields): for an apply the
// API server refused because of another manager's items, which may be the
// only items of a list it requires (a Service's one port, edited).
func (r *Reconciler) repairLive(ctx context.Context, desired client.Object) (bool, error) {
	gvk, err := apiutil.GVKForObject(desired, r.Scheme())
	if err != nil {
		return false, err
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		return false, err
	}
	return r.replaceForeignItems(ctx, live, desired, true)
}
