package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// reasonConstants are the event reasons and condition reasons api/v1beta1
// declares: its string constants named Event... or Reason..., by value,
// each with the constant's name.
func reasonConstants(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for value, name := range stringConstants(t, "api/v1beta1") {
		if strings.HasPrefix(name, "Reason") || strings.HasPrefix(name, "Event") {
			out[value] = name
		}
	}
	if len(out) < 20 {
		t.Fatalf("read only %d reasons from api/v1beta1 (%v): has the way they are declared changed?", len(out), out)
	}
	return out
}

// TestEveryReasonIsDocumented: every event reason and condition reason in
// api/v1beta1 appears in docs/ as code (`Reason`), so the tables users read
// (docs/operations.md) cannot fall behind the API.
func TestEveryReasonIsDocumented(t *testing.T) {
	documented := map[string]bool{}
	for _, d := range docs(t) {
		if !strings.HasPrefix(d.path, "docs/") {
			continue
		}
		for _, c := range d.code {
			documented[c] = true
		}
	}
	var missing []string
	for value, name := range reasonConstants(t) {
		if !documented[value] {
			missing = append(missing, "`"+value+"` ("+name+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("api/v1beta1's reason %s appears nowhere in docs/ as code: add it to the tables of docs/operations.md", m)
	}
}

// module is go.mod's module path: imports under it name this repository's
// packages.
const module = "github.com/mydeployment-io/mydeployment-operator/"

// goPackage is one directory's non-test Go files, parsed.
type goPackage struct {
	dir    string
	fset   *token.FileSet
	files  []*ast.File
	consts map[string]string // constant name -> string value
}

// goPackages parses every Go package under the given directories of the
// repository (recursively), by directory.
func goPackages(t *testing.T, dirs ...string) map[string]*goPackage {
	t.Helper()
	out := map[string]*goPackage{}
	for _, top := range dirs {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return err
			}
			if e.Name() == "testdata" {
				return filepath.SkipDir
			}
			fset := token.NewFileSet()
			pkgs, err := parser.ParseDir(fset, path, func(fi os.FileInfo) bool {
				return !strings.HasSuffix(fi.Name(), "_test.go")
			}, 0)
			if err != nil {
				return err
			}
			rel := filepath.ToSlash(strings.TrimPrefix(path, root+"/"))
			for _, pkg := range pkgs {
				p := &goPackage{dir: rel, fset: fset, consts: fileStringConstants(pkg)}
				for _, f := range pkg.Files {
					p.files = append(p.files, f)
				}
				out[rel] = p
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// imports maps a file's import names to the repository directories they
// name (imports from outside the repository are left out).
func imports(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.HasPrefix(path, module) {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = strings.TrimPrefix(path, module)
	}
	return out
}

// emitter finds the event reasons the code emits.
type emitter struct {
	t       *testing.T
	pkgs    map[string]*goPackage
	reasons map[string]string // reason -> where it is emitted
}

// constant is the string value of e if e names a constant of this
// repository: a name of pkg, or a pkg-qualified name of an import.
func (em *emitter) constant(pkg *goPackage, f *ast.File, e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.Ident:
		v, ok := pkg.consts[e.Name]
		return v, ok
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok {
			return "", false
		}
		dir, ok := imports(f)[x.Name]
		if !ok || em.pkgs[dir] == nil {
			return "", false
		}
		v, ok := em.pkgs[dir].consts[e.Sel.Name]
		return v, ok
	}
	return "", false
}

// lastName is the name an expression ends with: x for x, f for a.b.f.
func lastName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// sink is a call that records an event, and the index of its reason.
type sink struct {
	fn    *ast.FuncDecl
	file  *ast.File
	call  *ast.CallExpr
	index int
}

// sinks are the calls of pkg that record an event: Recorder.Eventf (the
// events API: regarding, related, type, reason, ...), and calls of a
// function of pkg that passes one of its parameters to Eventf as the
// reason (a wrapper such as the Application controller's event).
func (em *emitter) sinks(pkg *goPackage) []sink {
	wrappers := map[string]int{}
	var all []sink
	for _, f := range pkg.files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Eventf" && len(call.Args) >= 4 {
					if i := paramIndex(fn, call.Args[3]); i >= 0 {
						wrappers[fn.Name.Name] = i
						return true
					}
					all = append(all, sink{fn: fn, file: f, call: call, index: 3})
				}
				return true
			})
		}
	}
	for _, f := range pkg.files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if i, ok := wrappers[lastName(call.Fun)]; ok && i < len(call.Args) {
						all = append(all, sink{fn: fn, file: f, call: call, index: i})
					}
				}
				return true
			})
		}
	}
	return all
}

// moduleEvent is a reason a module hands the controller to record an
// event with, and where.
type moduleEvent struct{ reason, where string }

// moduleEvents are the reasons pkg's modules ask events for through the
// module contract: the Reason of every optin.Event (an Announcer's event)
// and optin.Cause (an Aborter's abort event) literal. One whose reason
// this cannot trace to a constant fails the test.
func (em *emitter) moduleEvents(pkg *goPackage) []moduleEvent {
	var out []moduleEvent
	for _, f := range pkg.files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || lit.Type == nil {
				return true
			}
			var lits []*ast.CompositeLit
			switch types.ExprString(lit.Type) {
			case "optin.Event", "optin.Cause":
				lits = append(lits, lit)
			case "[]optin.Event": // elements with their type elided
				for _, elt := range lit.Elts {
					if l, ok := elt.(*ast.CompositeLit); ok && l.Type == nil {
						lits = append(lits, l)
					}
				}
			}
			for _, elt := range elements(lits) {
				kv, ok := elt.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if k, ok := kv.Key.(*ast.Ident); !ok || k.Name != "Reason" {
					continue
				}
				where := fmt.Sprintf("%s/%s:%d", pkg.dir, filepath.Base(pkg.fset.Position(kv.Pos()).Filename), pkg.fset.Position(kv.Pos()).Line)
				v, ok := em.constant(pkg, f, kv.Value)
				if !ok {
					em.t.Errorf("%s asks an event whose reason (%s) this test cannot trace to a constant: pass a constant",
						where, types.ExprString(kv.Value))
					continue
				}
				out = append(out, moduleEvent{reason: v, where: where})
			}
			return true
		})
	}
	return out
}

// elements are the elements of lits, in order.
func elements(lits []*ast.CompositeLit) []ast.Expr {
	var out []ast.Expr
	for _, l := range lits {
		out = append(out, l.Elts...)
	}
	return out
}

// paramIndex is the index of the parameter of fn that e names, or -1.
func paramIndex(fn *ast.FuncDecl, e ast.Expr) int {
	id, ok := e.(*ast.Ident)
	if !ok {
		return -1
	}
	i := 0
	for _, field := range fn.Type.Params.List {
		for _, name := range field.Names {
			if name.Name == id.Name {
				return i
			}
			i++
		}
	}
	return -1
}

// reasonsOf are the constants a sink's reason can be: the constant
// itself; else, for an expression such as a condition's c.Reason, the
// constants the function compares it with (the guard that picks which
// reasons become events); else the constants assigned to its name, within
// the function for a local variable, anywhere in the package for a field
// (x.f = C, T{f: C}).
func (em *emitter) reasonsOf(pkg *goPackage, s sink) []string {
	e := s.call.Args[s.index]
	if v, ok := em.constant(pkg, s.file, e); ok {
		return []string{v}
	}
	text := types.ExprString(e)
	var out []string
	ast.Inspect(s.fn.Body, func(n ast.Node) bool {
		if b, ok := n.(*ast.BinaryExpr); ok && (b.Op == token.EQL || b.Op == token.NEQ) {
			for _, pair := range [][2]ast.Expr{{b.X, b.Y}, {b.Y, b.X}} {
				if types.ExprString(pair[0]) == text {
					if v, ok := em.constant(pkg, s.file, pair[1]); ok {
						out = append(out, v)
					}
				}
			}
		}
		return true
	})
	if len(out) > 0 {
		return out
	}
	name := lastName(e)
	_, field := e.(*ast.SelectorExpr)
	scan := func(f *ast.File, n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					if _, sel := lhs.(*ast.SelectorExpr); sel == field && lastName(lhs) == name && len(n.Rhs) == len(n.Lhs) {
						if v, ok := em.constant(pkg, f, n.Rhs[i]); ok {
							out = append(out, v)
						}
					}
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && field && k.Name == name {
					if v, ok := em.constant(pkg, f, n.Value); ok {
						out = append(out, v)
					}
				}
			}
			return true
		})
	}
	if field {
		for _, f := range pkg.files {
			scan(f, f)
		}
	} else {
		scan(s.file, s.fn.Body)
	}
	return out
}

// emittedReasons are the reasons the code under internal/ and cmd/ records
// events with, each with where: every reason its event calls name (see
// reasonsOf), and every constant named Event... (the API's declaration of
// an event reason, however the code comes to pass it). A call whose
// reason this cannot trace fails the test: name a constant there.
func emittedReasons(t *testing.T) map[string]string {
	t.Helper()
	em := &emitter{t: t, pkgs: goPackages(t, "api", "internal", "cmd"), reasons: map[string]string{}}
	for _, pkg := range em.pkgs {
		for name, value := range pkg.consts {
			if strings.HasPrefix(name, "Event") && !strings.HasPrefix(name, "EventType") {
				em.reasons[value] = pkg.dir + "." + name
			}
		}
		for _, s := range em.sinks(pkg) {
			pos := pkg.fset.Position(s.call.Pos())
			where := fmt.Sprintf("%s/%s:%d", pkg.dir, filepath.Base(pos.Filename), pos.Line)
			rs := em.reasonsOf(pkg, s)
			if len(rs) == 0 {
				t.Errorf("%s records an event whose reason (%s) this test cannot trace to a constant: pass a constant, or compare it with the constants it can be",
					where, types.ExprString(s.call.Args[s.index]))
			}
			for _, r := range rs {
				if _, ok := em.reasons[r]; !ok {
					em.reasons[r] = where
				}
			}
		}
	}
	for _, pkg := range em.pkgs {
		for _, m := range em.moduleEvents(pkg) {
			if _, ok := em.reasons[m.reason]; !ok {
				em.reasons[m.reason] = m.where
			}
		}
	}
	if len(em.reasons) < 20 {
		t.Fatalf("found only %d event reasons in the code (%v): has the way events are recorded changed?", len(em.reasons), em.reasons)
	}
	return em.reasons
}

// eventsSection is docs/operations.md's part on events: from "Events,
// shown by" to the next heading.
func eventsSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\nEvents, shown by")
	if start < 0 {
		t.Fatal("docs/operations.md has no paragraph starting 'Events, shown by': where is its event table now?")
	}
	text = text[start:]
	if end := strings.Index(text, "\n#"); end >= 0 {
		text = text[:end]
	}
	return text
}

// TestEveryEmittedEventIsInTheEventTable: every reason the code records an
// event with is in docs/operations.md's events section (the table for
// MyDeployments, the sentence for Applications), and every reason that
// table lists is one the code records: a user reading the events of
// `kubectl describe` finds each there, and nothing that never comes.
func TestEveryEmittedEventIsInTheEventTable(t *testing.T) {
	emitted := emittedReasons(t)
	section := eventsSection(t)
	documented := map[string]bool{}
	for _, m := range inlineCode.FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
	}
	var missing []string
	for r, where := range emitted {
		if !documented[r] {
			missing = append(missing, fmt.Sprintf("`%s` (%s)", r, where))
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("the code records events with reason %s, which docs/operations.md's events section does not list", m)
	}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "reason" {
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(cells[1], -1) {
			if _, ok := emitted[m[1]]; !ok {
				t.Errorf("docs/operations.md's event table lists `%s`, which no code records an event with", m[1])
			}
		}
	}
}
