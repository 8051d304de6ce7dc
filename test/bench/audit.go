package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/robot-operator/robot-operator/test/internal/audit"
	"github.com/robot-operator/robot-operator/test/internal/localcluster"
)

// key names a kind of request: "verb resource[/subresource] code", with
// the verb "patch(apply)" for a server-side apply, told from the other
// patches by its force=true: the operator applies with it, and sends its
// other patches (the hand-overs of managedFields, say) without.
func key(e *audit.Event) string {
	verb := e.Verb
	if verb == "patch" && strings.Contains(e.RequestURI, "force=true") {
		verb = "patch(apply)"
	}
	return fmt.Sprintf("%s %s %d", verb, e.Resource(), e.ResponseStatus.Code)
}

// apiCost is what the operator asked of the API server in a time window.
type apiCost struct {
	writes map[string]int // "verb resource[/subresource] code" → requests, Events excluded
	reads  map[string]int
	events int // Event writes
	total  struct{ writes, reads, conflicts, throttled int }
}

// readAudit counts the operator's requests received in [from, to).
func readAudit(path string, from, to time.Time) (*apiCost, error) {
	cost := &apiCost{writes: map[string]int{}, reads: map[string]int{}}
	err := audit.Scan(path, localcluster.OperatorUser, false, func(e *audit.Event) {
		if e.RequestReceived.Before(from) || !e.RequestReceived.Before(to) {
			return
		}
		switch {
		case e.ObjectRef.Resource == "events" && e.Write():
			cost.events++
		case e.Write():
			cost.writes[key(e)]++
			cost.total.writes++
		default:
			cost.reads[key(e)]++
			cost.total.reads++
		}
		switch e.ResponseStatus.Code {
		case 409:
			cost.total.conflicts++
		case 429:
			cost.total.throttled++
		}
	})
	return cost, err
}

// breakdown renders counts per Robot, largest first.
func breakdown(counts map[string]int, n int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return counts[keys[i]] > counts[keys[j]] || counts[keys[i]] == counts[keys[j]] && keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %.2f", k, float64(counts[k])/float64(n)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "<br>")
}
