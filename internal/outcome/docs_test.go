package outcome

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// reasonConstants returns the reasons that pkg/apis/robot/v1beta1/types.go
// declares, by constant name.
func reasonConstants(t *testing.T) map[string]string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "pkg", "apis", "robot", "v1beta1", "types.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	ast.Inspect(file, func(node ast.Node) bool {
		spec, ok := node.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range spec.Names {
			if !strings.HasPrefix(name.Name, "Reason") || i >= len(spec.Values) {
				continue
			}
			if literal, ok := spec.Values[i].(*ast.BasicLit); ok && literal.Kind == token.STRING {
				value, err := strconv.Unquote(literal.Value)
				if err != nil {
					t.Fatal(err)
				}
				reasons[name.Name] = value
			}
		}
		return true
	})
	if len(reasons) < 30 {
		t.Fatalf("found %d reasons in types.go, want the 30 and more there are: has the file moved?", len(reasons))
	}
	return reasons
}

// TestReasonsAreDocumented: every reason in types.go is in a table of
// docs/api.md (a Robot's condition or a Warning event carries it, and a
// person reading it looks there), and every reason whose Synced entry
// records a Warning, and the Warnings no condition carries, are in its list
// of the operator's events. A reason added without its documentation fails
// here.
func TestReasonsAreDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	var tables, events strings.Builder
	inEvents := false
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(line, "|") {
			tables.WriteString(line + "\n")
		}
		switch {
		case strings.HasPrefix(line, "- **Events on changes only**"):
			inEvents = true
		case strings.HasPrefix(line, "- ") || line == "":
			inEvents = false
		}
		if inEvents {
			events.WriteString(line + "\n")
		}
	}
	if events.Len() == 0 {
		t.Fatal(`docs/api.md has no "- **Events on changes only**" list`)
	}
	for name, reason := range reasonConstants(t) {
		if !strings.Contains(tables.String(), "`"+reason+"`") {
			t.Errorf("%s (%q) is in no table of docs/api.md", name, reason)
		}
		if WarnsOnEntry(reason) && !strings.Contains(events.String(), "`"+reason+"`") {
			t.Errorf("%s (%q) records a Warning, and docs/api.md's list of events does not name it", name, reason)
		}
	}
	for _, reason := range []string{ReasonStatusTooLarge, ReasonStatusValidationTooCostly, "AnnotationIgnored"} {
		if !strings.Contains(tables.String(), "`"+reason+"`") || !strings.Contains(events.String(), "`"+reason+"`") {
			t.Errorf("the Warning %q is not in both a table and the list of events of docs/api.md", reason)
		}
	}
}
