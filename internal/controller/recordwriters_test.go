package controller

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// recordAdders are the freshness record's methods that add to it: what a
// write of ours leaves for the cache to show.
var recordAdders = []string{"Open", "ExpectCreate", "ExpectDelete", "ExpectChange", "StepWritten", "ForgetSteps", "Wrote"}

// Act is the one writer of the freshness record: of the controller's
// files, only act's write table (writes.go) and act.go, which opens a
// batch of creates, call the record's adding methods. (Observation may only
// retire what the cache shows: Observe, Gone, CatchUp.)
func TestOnlyActWritesTheRecord(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"writes.go", "act.go"}
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && slices.Contains(recordAdders, sel.Sel.Name) {
				if !slices.Contains(allowed, name) {
					t.Errorf("%s calls %s: only act's writes (%v) add to the freshness record", name, sel.Sel.Name, allowed)
				}
				seen++
			}
			return true
		})
	}
	if seen == 0 {
		t.Fatal("no call of the record's adding methods found: the check reads the wrong files")
	}
}
