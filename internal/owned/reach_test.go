package owned

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// kindReach is how far a kind may reach into the operator's code: the
// production files outside pkg/ that may name its Go types.
type kindReach struct {
	kind string
	// names are the substrings of an identifier that name the kind's
	// types, clients, informers and listers.
	names []string
	// imports are the packages of the kind's API alone: to import one is
	// to name the kind.
	imports []string
	// limit is how many files may name it: its description in
	// internal/owned, its pure builder in internal/workload, its spec's
	// comparison in internal/drift, and, if the status reads it, where
	// internal/status does.
	limit int
}

var kindReaches = []kindReach{
	{kind: "PodDisruptionBudget", names: []string{"PodDisruptionBudget"},
		imports: []string{"k8s.io/api/policy/v1", "k8s.io/client-go/applyconfigurations/policy/v1",
			"k8s.io/client-go/informers/policy/v1", "k8s.io/client-go/listers/policy/v1"},
		limit: 4},
	// The route's status is read in two files of internal/status: its
	// address and its acceptance.
	{kind: "HTTPRoute", names: []string{"HTTPRoute"}, limit: 6},
}

// TestAKindReachesFewFiles: each kind's Go types are named in the few
// files that say what is the kind's own (its description, its builder, its
// spec's comparison, what the status reads of it), and nowhere else: the
// wiring, the caches' transform, the list of kinds and the controller
// handle every kind alike. Comments and strings do not count.
func TestAKindReachesFewFiles(t *testing.T) {
	files := productionFiles(t, filepath.Join("..", ".."))
	for _, reach := range kindReaches {
		var naming []string
		for path, file := range files {
			if namesKind(file, reach) {
				naming = append(naming, path)
			}
		}
		slices.Sort(naming)
		if len(naming) > reach.limit {
			t.Errorf("%s is named in %d production files, more than %d:\n  %s", reach.kind, len(naming), reach.limit, strings.Join(naming, "\n  "))
		}
		if !slices.ContainsFunc(naming, func(path string) bool { return strings.HasPrefix(path, "internal/owned/") }) {
			t.Errorf("%s is named in no file of internal/owned, where it is described: %v", reach.kind, naming)
		}
	}
}

// productionFiles parses the module's production Go files under root,
// outside pkg/ (generated, and the API types), test/ and hack/, by their
// paths from root.
func productionFiles(t *testing.T, root string) map[string]*ast.File {
	t.Helper()
	files := map[string]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == ".":
				return nil
			case rel == "pkg", rel == "test", rel == "hack", rel == "vendor", strings.HasPrefix(d.Name(), "."), strings.HasPrefix(d.Name(), "_"), d.Name() == "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files[rel] = file
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files["controller.go"]; !ok || len(files) < 50 {
		t.Fatalf("found %d production files under %s, not the module's", len(files), root)
	}
	return files
}

// namesKind reports whether file imports a package of reach's kind alone,
// or holds an identifier (a name, a selector, a type) that names the kind.
func namesKind(file *ast.File, reach kindReach) bool {
	for _, spec := range file.Imports {
		if path, err := strconv.Unquote(spec.Path.Value); err == nil && slices.Contains(reach.imports, path) {
			return true
		}
	}
	found := false
	ast.Inspect(file, func(node ast.Node) bool {
		if ident, ok := node.(*ast.Ident); ok && slices.ContainsFunc(reach.names, func(name string) bool { return strings.Contains(ident.Name, name) }) {
			found = true
		}
		return !found
	})
	return found
}
