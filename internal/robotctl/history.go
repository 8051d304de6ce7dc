package robotctl

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// History writes the revisions of the Robot ns/name to out, oldest first:
// each one's number, when it was created, whether it is the Robot's current
// spec, and what changed from the revision before it.
func History(ctx context.Context, clients Clients, ns, name string, out io.Writer) error {
	h, err := readHistory(ctx, clients, ns, name)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "REVISION\tCREATED\tCURRENT\tCHANGE")
	for i, revision := range h.revisions {
		summary := "first recorded spec"
		if i > 0 {
			changes, err := Changes(h.revisions[i-1].Data.Raw, revision.Data.Raw)
			if err != nil {
				return fmt.Errorf("comparing revision %d with %d: %w", revision.Revision, h.revisions[i-1].Revision, err)
			}
			summary = strings.Join(changes, "; ")
			if summary == "" {
				summary = "no change"
			}
		}
		current := ""
		if i == h.current {
			current = "*"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", revision.Revision, revision.CreationTimestamp.UTC().Format(time.RFC3339), current, summary)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if h.current < 0 {
		fmt.Fprintf(out, "The Robot's current spec (generation %d) is in no revision yet: the operator records it once it syncs it.\n", h.robot.Generation)
	}
	return nil
}
