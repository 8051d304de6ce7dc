package observe

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadOnly: reads and the reviews reach the server; every other verb
// is refused before it is sent.
func TestReadOnly(t *testing.T) {
	var sent []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent = append(sent, r.Method+" "+r.URL.Path)
	}))
	defer server.Close()
	client := &http.Client{Transport: ReadOnly(http.DefaultTransport)}
	tests := []struct {
		method, path string
		allowed      bool
	}{
		{http.MethodGet, "/apis/apps/v1/deployments", true},
		{http.MethodGet, "/apis/apps/v1/deployments?watch=true", true},
		{http.MethodHead, "/healthz", true},
		{http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", true},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", true},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", true},
		{http.MethodPost, "/apis/apps/v1/namespaces/a/deployments", false},
		{http.MethodPost, "/apis/apps/v1/namespaces/a/deployments?dryRun=All", false},
		{http.MethodPost, "/api/v1/namespaces/a/events", false},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/a/leases/robot-operator", false},
		{http.MethodPatch, "/apis/robot.dev/v1beta1/namespaces/a/robots/web/status", false},
		{http.MethodDelete, "/api/v1/namespaces/a/services/web", false},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews/x", false},
	}
	for _, tt := range tests {
		sent = nil
		req, err := http.NewRequest(tt.method, server.URL+tt.path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		var refused *ErrWriteRefused
		switch {
		case tt.allowed && (err != nil || len(sent) != 1):
			t.Errorf("%s %s: %v, sent %q; want it sent", tt.method, tt.path, err, sent)
		case !tt.allowed && (!errors.As(err, &refused) || len(sent) != 0):
			t.Errorf("%s %s: %v, sent %q; want it refused unsent", tt.method, tt.path, err, sent)
		}
	}
}
