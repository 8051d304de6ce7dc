package robotctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"
)

// Diff writes to out how revision number of the Robot ns/name differs from
// the Robot's current spec: the two specs as YAML, in a unified diff from
// the current spec to the revision's, which is what an undo to it would
// change. It writes nothing when they are the same.
func Diff(ctx context.Context, clients Clients, ns, name string, number int64, out io.Writer) error {
	h, err := readHistory(ctx, clients, ns, name)
	if err != nil {
		return err
	}
	revision, err := h.find(number)
	if err != nil {
		return err
	}
	current, err := json.Marshal(h.robot.Spec)
	if err != nil {
		return err
	}
	text, err := UnifiedDiff(current, revision.Data.Raw, "current spec", fmt.Sprintf("revision %d", number))
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, text)
	return err
}

// UnifiedDiff returns the unified diff of the JSON documents from and to,
// each written as YAML (keys sorted), labelled fromName and toName: empty
// when their YAML is the same.
func UnifiedDiff(from, to []byte, fromName, toName string) (string, error) {
	a, err := yaml.JSONToYAML(from)
	if err != nil {
		return "", err
	}
	b, err := yaml.JSONToYAML(to)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        lines(a),
		B:        lines(b),
		FromFile: fromName,
		ToFile:   toName,
		Context:  3,
	})
}

// lines returns the lines of text, each with its newline.
func lines(text []byte) []string {
	return difflib.SplitLines(strings.TrimSuffix(string(text), "\n"))
}
