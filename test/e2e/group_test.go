//go:build e2e

package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEveryTestSaysHowItSharesTheCluster: every test of this package starts
// with parallel(t) or exclusive(t, why) (group.go), so that each runs in
// exactly one of the groups that make e2e runs side by side, and none runs
// beside the others while it disturbs them.
func TestEveryTestSaysHowItSharesTheCluster(t *testing.T) {
	parallel(t)
	files, err := filepath.Glob(filepath.Join(env.root, "test", "e2e", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	tests := map[group]int{}
	for _, path := range files {
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			g, problem := declaredGroup(fn)
			if problem != "" {
				t.Errorf("%s (%s): %s", fn.Name.Name, fset.Position(fn.Pos()), problem)
				continue
			}
			tests[g]++
		}
	}
	t.Logf("%d parallel tests, %d exclusive ones", tests[groupParallel], tests[groupExclusive])
	if tests[groupParallel] == 0 || tests[groupExclusive] == 0 {
		t.Errorf("found %d parallel and %d exclusive tests in %d files: want some of each", tests[groupParallel], tests[groupExclusive], len(files))
	}
}

// declaredGroup returns the group a test function's first statement puts it
// in, or what is wrong with that statement.
func declaredGroup(fn *ast.FuncDecl) (group, string) {
	const want = "its first statement must be parallel(t) or exclusive(t, why)"
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return "", want
	}
	stmt, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return "", want
	}
	call, ok := stmt.X.(*ast.CallExpr)
	if !ok {
		return "", want
	}
	name, ok := call.Fun.(*ast.Ident)
	if !ok {
		return "", want
	}
	switch name.Name {
	case "parallel":
		return groupParallel, ""
	case "exclusive":
		if len(call.Args) == 2 {
			if lit, ok := call.Args[1].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if why, err := strconv.Unquote(lit.Value); err == nil && strings.TrimSpace(why) != "" {
					return groupExclusive, ""
				}
			}
		}
		return "", "exclusive(t, why) wants why as a string that says why the test needs the cluster to itself"
	}
	return "", want
}
