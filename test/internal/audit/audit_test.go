package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const user = "system:serviceaccount:robot-operator:robot-operator"

func writeLog(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var sample = []string{
	// A patch of a status, counted at its end only.
	`{"stage":"ResponseStarted","verb":"patch","user":{"username":"` + user + `"},"objectRef":{"resource":"robots","subresource":"status","name":"a"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-02T03:04:05.000001Z"}`,
	`{"stage":"ResponseComplete","verb":"patch","user":{"username":"` + user + `"},"objectRef":{"resource":"robots","subresource":"status","name":"a"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-02T03:04:05.000001Z"}`,
	// A watch, counted at its start only.
	`{"stage":"ResponseStarted","verb":"watch","requestURI":"/apis/apps/v1/deployments?resourceVersion=7\u0026watch=true","user":{"username":"` + user + `"},"objectRef":{"resource":"deployments"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-02T03:04:06Z"}`,
	`{"stage":"ResponseComplete","verb":"watch","user":{"username":"` + user + `"},"objectRef":{"resource":"deployments"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-02T03:04:06Z"}`,
	// Somebody else's request.
	`{"stage":"ResponseComplete","verb":"create","user":{"username":"admin"},"objectRef":{"resource":"robots"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-01-02T03:04:07Z"}`,
}

func TestScanCountsEachRequestOnce(t *testing.T) {
	var got []*Event
	if err := Scan(writeLog(t, sample...), user, false, func(e *Event) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d requests, want 2: %+v", len(got), got)
	}
	patch, watch := got[0], got[1]
	if patch.Verb != "patch" || patch.Stage != "ResponseComplete" || patch.Resource() != "robots/status" || patch.ObjectRef.Name != "a" || patch.ResponseStatus.Code != 200 || !patch.Write() {
		t.Errorf("patch: %+v", patch)
	}
	if want := time.Date(2026, 1, 2, 3, 4, 5, 1000, time.UTC); !patch.RequestReceived.Equal(want) {
		t.Errorf("patch received at %s, want %s", patch.RequestReceived, want)
	}
	if watch.Verb != "watch" || watch.Stage != "ResponseStarted" || watch.Resource() != "deployments" || watch.Write() {
		t.Errorf("watch: %+v", watch)
	}
	if !strings.Contains(watch.RequestURI, "resourceVersion=7") {
		t.Errorf("watch request URI %q", watch.RequestURI)
	}
}

func TestScanCutLine(t *testing.T) {
	path := writeLog(t, append(append([]string{}, sample...), `{"stage":"ResponseCompl`)...)
	if err := Scan(path, user, false, func(*Event) {}); err == nil {
		t.Error("a cut line: no error without skipBad")
	}
	n := 0
	if err := Scan(path, user, true, func(*Event) { n++ }); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("with skipBad: %d requests, want 2", n)
	}
}

func TestWrite(t *testing.T) {
	for verb, want := range map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true,
		"get": false, "list": false, "watch": false} {
		if got := (&Event{Verb: verb}).Write(); got != want {
			t.Errorf("%s: Write() = %v, want %v", verb, got, want)
		}
	}
}

// TestReviewsAreNoWrites: a review (a SelfSubjectAccessReview, a
// TokenReview) is created, but asks a question and stores nothing: not a
// write. Anything else created is.
func TestReviewsAreNoWrites(t *testing.T) {
	for _, tt := range []struct {
		group, resource string
		write           bool
	}{
		{"authorization.k8s.io", "selfsubjectaccessreviews", false},
		{"authorization.k8s.io", "subjectaccessreviews", false},
		{"authentication.k8s.io", "tokenreviews", false},
		{"apps", "deployments", true},
		{"", "pods", true},
	} {
		e := &Event{Verb: "create"}
		e.ObjectRef.APIGroup, e.ObjectRef.Resource = tt.group, tt.resource
		if got := e.Write(); got != tt.write {
			t.Errorf("create %s.%s: Write() = %v, want %v", tt.resource, tt.group, got, tt.write)
		}
	}
}
