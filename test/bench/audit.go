package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// auditEvent holds the fields of an audit log line the benchmark reads.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

func (e *auditEvent) write() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

func (e *auditEvent) key() string {
	resource := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		resource += "/" + e.ObjectRef.Subresource
	}
	return fmt.Sprintf("%s %s %d", e.Verb, resource, e.ResponseStatus.Code)
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
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cost := &apiCost{writes: map[string]int{}, reads: map[string]int{}}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 16<<20)
	for s.Scan() {
		var e auditEvent
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		// One line per request: a watch's start, every other request's end.
		if e.User.Username != operatorUser || !(e.Stage == "ResponseComplete" && e.Verb != "watch" || e.Stage == "ResponseStarted" && e.Verb == "watch") {
			continue
		}
		if e.RequestReceived.Before(from) || !e.RequestReceived.Before(to) {
			continue
		}
		switch {
		case e.ObjectRef.Resource == "events" && e.write():
			cost.events++
		case e.write():
			cost.writes[e.key()]++
			cost.total.writes++
		default:
			cost.reads[e.key()]++
			cost.total.reads++
		}
		switch e.ResponseStatus.Code {
		case 409:
			cost.total.conflicts++
		case 429:
			cost.total.throttled++
		}
	}
	return cost, s.Err()
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
