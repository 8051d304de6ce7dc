package owned

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
	// The history's revisions: its builder, its description, the cache's
	// transform, which keeps a revision's metadata by its name's hash, and
	// the status, which remembers the last Ready one.
	{kind: "ControllerRevision", names: []string{"ControllerRevision"}, limit: 4},
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
		t.Logf("%s is named in %d production files: %s", reach.kind, len(naming), strings.Join(naming, ", "))
		if len(naming) > reach.limit {
			t.Errorf("%s is named in %d production files, more than %d:\n  %s", reach.kind, len(naming), reach.limit, strings.Join(naming, "\n  "))
		}
		if !slices.ContainsFunc(naming, func(path string) bool { return strings.HasPrefix(path, "internal/owned/") }) {
			t.Errorf("%s is named in no file of internal/owned, where it is described: %v", reach.kind, naming)
		}
	}
}

// productionFiles parses the module's production Go files under root,
// outside pkg/ (generated, and the API types), test/, hack/,
// internal/robottest (which only tests import) and internal/robotctl (the
// kubectl plugin), by their paths from root.
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
			case rel == "pkg", rel == "test", rel == "hack", rel == "vendor", strings.HasPrefix(d.Name(), "."), strings.HasPrefix(d.Name(), "_"), d.Name() == "testdata",
				// The fixtures that only tests import, and the kubectl
				// plugin: a program of its own, which reads a Robot's
				// history as any client of the API does, not a path of
				// the operator's.
				rel == "internal/robottest", rel == "internal/robotctl":
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

// TestAddingAKindDoc: docs/architecture.md's "Adding a kind" says what
// adding a kind takes as the code has it: every file it names exists,
// every name it gives (owned.Kind's fields, a package's function or type,
// a test) is declared, and the list of kinds it names is the one in
// kinds.go, in its order.
func TestAddingAKindDoc(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := markdownSection(t, string(doc), "### Adding a kind")
	declared := map[string]map[string]bool{}
	for _, pkg := range []string{"owned", "workload", "drift", "outcome", "status", "writer", "transform"} {
		declared[pkg] = declaredNames(t, filepath.Join(root, "internal", pkg), false)
	}
	ownedTests := declaredNames(t, ".", true)
	rootNames := declaredNames(t, root, false)
	bare := func(name string) bool {
		return declared["owned"]["Kind."+name] || declared["owned"]["Sources."+name] || declared["owned"]["Paths."+name] ||
			declared["owned"]["Path."+name] || rootNames["Controller."+name] || ownedTests[name] && strings.HasPrefix(name, "Test") ||
			slices.ContainsFunc(kinds, func(entry kindEntry) bool { return entry.name == name })
	}
	qualified := regexp.MustCompile(`^(owned|workload|drift|outcome|status|writer|transform)\.(\w+(\.\w+)?)$`)
	checked := 0
	for _, match := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(section, -1) {
		token := match[1]
		switch parts := qualified.FindStringSubmatch(token); {
		case strings.HasPrefix(token, "internal/") || strings.HasSuffix(token, ".go"):
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(token))); err != nil {
				t.Errorf("the section names %s, which does not exist", token)
			}
		case parts != nil:
			if !declared[parts[1]][parts[2]] {
				t.Errorf("the section names %s, which internal/%s does not declare", token, parts[1])
			}
		case regexp.MustCompile(`^\w+$`).MatchString(token):
			if !bare(token) && token != "kinds" {
				t.Errorf("the section names %s, neither a field of owned.Kind or owned.Sources, a method of owned.Paths, a test of internal/owned nor a kind in the list", token)
			}
		default:
			continue
		}
		checked++
	}
	if checked < 20 {
		t.Errorf("checked %d names in the section, too few: is it the section?", checked)
	}
	_, listed, found := strings.Cut(section, "The list today:")
	listed, _, _ = strings.Cut(listed, ".")
	var want []string
	for _, entry := range kinds {
		want = append(want, "`"+entry.name+"`")
	}
	if !found || strings.Join(strings.Fields(listed), " ") != strings.Join(want, ", ") {
		t.Errorf("the section's list of kinds is %q, the code's %s", listed, strings.Join(want, ", "))
	}
	if !strings.Contains(section, "`kinds`, in `internal/owned/kinds.go`") || !declared["owned"]["kinds"] {
		t.Errorf("the section does not name the list of kinds where it is, kinds in internal/owned/kinds.go")
	}
}

// markdownSection returns the text of doc from heading up to the next
// heading or bold paragraph title.
func markdownSection(t *testing.T, doc, heading string) string {
	t.Helper()
	_, section, found := strings.Cut(doc, "\n"+heading+"\n")
	if !found {
		t.Fatalf("no %q in the document", heading)
	}
	end := regexp.MustCompile(`\n(#|\*\*)`).FindStringIndex(section)
	if end != nil {
		section = section[:end[0]]
	}
	return section
}

// declaredNames returns the names the Go package in dir declares: its
// top-level names, its methods and struct fields as Type.Name; of its test
// files only (tests), or of the others.
func declaredNames(t *testing.T, dir string, tests bool) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") != tests {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				name := decl.Name.Name
				if decl.Recv != nil && len(decl.Recv.List) == 1 {
					name = receiverType(decl.Recv.List[0].Type) + "." + name
				}
				names[name] = true
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						names[spec.Name.Name] = true
						if st, ok := spec.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, fieldName := range field.Names {
									names[spec.Name.Name+"."+fieldName.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, name := range spec.Names {
							names[name.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}

// receiverType is the name of a method's receiver type, without its
// pointer or type parameters.
func receiverType(expr ast.Expr) string {
	switch e := expr.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
