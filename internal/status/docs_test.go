package status

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

// TestKstatusTableMatches: the row of docs/api.md's kstatus table that reads
// as Failed names exactly the reasons that make a Robot Stalled.
func TestKstatusTableMatches(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(line, "| False") && strings.HasSuffix(line, "| `Failed` |") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/api.md has no kstatus row ending in | `Failed` |")
	}
	documented := sets.New[string]()
	for _, m := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(strings.Split(row, "|")[1], -1) {
		documented.Insert(m[1])
	}
	stalled := sets.New[string]()
	for reason := range stalledReasons {
		stalled.Insert(reason)
	}
	for reason := range heldReasons {
		stalled.Insert(reason)
	}
	if missing := sets.List(stalled.Difference(documented)); len(missing) > 0 {
		t.Errorf("Stalled reasons that docs/api.md's kstatus table does not list as Failed: %v", missing)
	}
	if extra := sets.List(documented.Difference(stalled)); len(extra) > 0 {
		t.Errorf("reasons docs/api.md's kstatus table lists as Failed that do not make a Robot Stalled: %v", extra)
	}
}
