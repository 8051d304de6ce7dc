// Package audit reads the API server's audit log (JSON lines, Metadata
// level) for the operator's requests.
package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// Event holds the fields of an audit log line that the programs under
// test/ read.
type Event struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	// RequestURI carries the query: a watch's resourceVersion, say.
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// Write reports whether the request changes something. A review (of a
// token, or of what a user may do) is created, but asks the API server a
// question and stores nothing: no write.
func (e *Event) Write() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return !reviewGroups[e.ObjectRef.APIGroup] || !strings.HasSuffix(e.ObjectRef.Resource, "reviews")
	}
	return false
}

// reviewGroups are the API groups whose "reviews" store nothing.
var reviewGroups = map[string]bool{"authorization.k8s.io": true, "authentication.k8s.io": true}

// Resource is the resource, and "/subresource" if any.
func (e *Event) Resource() string {
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

// Counted reports whether the line is the one that stands for its request
// (a watch's start, every other request's end) and the request is user's.
func (e *Event) Counted(user string) bool {
	return e.User.Username == user && (e.Stage == "ResponseComplete" && e.Verb != "watch" || e.Stage == "ResponseStarted" && e.Verb == "watch")
}

// Scan calls fn for each request of user in the audit log at path, once
// per request (see Counted), in the log's order. A line that is not valid
// JSON is an error unless skipBad is set, for logs that a killed API
// server may have cut short.
func Scan(path, user string, skipBad bool, fn func(*Event)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 16<<20)
	for s.Scan() {
		var e Event
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			if skipBad {
				continue
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		if e.Counted(user) {
			fn(&e)
		}
	}
	return s.Err()
}
