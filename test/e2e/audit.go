//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// auditLog reads the API server's audit log, which records every write
// (create, update, patch, delete) with its user agent: the tests count the
// operator's writes from it.
type auditLog struct {
	path string
	// offset is where the log ended when the run began: earlier entries are
	// never read.
	offset int64
	// err, when set, says why the log cannot be used; the tests that need
	// it fail with it.
	err error
}

// auditEvent is the part of an audit.k8s.io/v1 Event that the tests read.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	// Annotations hold the authorizer's decision
	// (authorization.k8s.io/decision) and admission's.
	Annotations map[string]string `json:"annotations"`
	UserAgent   string            `json:"userAgent"`
	ObjectRef   *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code    int `json:"code"`
		Details *struct {
			Causes []struct {
				Reason string `json:"reason"`
			} `json:"causes"`
		} `json:"details"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// code is the HTTP status the API server answered with.
func (e *auditEvent) code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// refusedCreate reports whether e is a create that the API server refused
// because the object exists already: it wrote nothing. The operator creates
// a Deployment that is not in its cache, and that is how it learns that the
// name is taken, or that its own Deployment is out of its cache.
func (e *auditEvent) refusedCreate() bool {
	return e.Verb == "create" && e.code() == http.StatusConflict
}

// refusedByAdmission reports whether e was allowed by RBAC and refused
// afterwards, by an admission plugin, policy or webhook: a 403 that says
// nothing of the operator's permissions (the dry run of a pod that Pod
// Security or a ResourceQuota refuses).
func (e *auditEvent) refusedByAdmission() bool {
	return e.Annotations["authorization.k8s.io/decision"] == "allow"
}

// hasCause reports whether the API server gave reason as a cause of its
// answer.
func (e *auditEvent) hasCause(reason string) bool {
	if e.ResponseStatus == nil || e.ResponseStatus.Details == nil {
		return false
	}
	for _, c := range e.ResponseStatus.Details.Causes {
		if c.Reason == reason {
			return true
		}
	}
	return false
}

func (e *auditEvent) String() string {
	object := e.RequestURI
	if ref := e.ObjectRef; ref != nil {
		object = ref.Resource
		if ref.Subresource != "" {
			object += "/" + ref.Subresource
		}
		object += " " + ref.Namespace + "/" + ref.Name
	}
	return fmt.Sprintf("%s %s %s -> %d (%s)", e.RequestReceivedTimestamp.UTC().Format("15:04:05.000000"), e.Verb, object, e.code(), e.UserAgent)
}

// auditQuery selects audit events; zero fields select everything.
type auditQuery struct {
	UserAgentPrefix string
	After           time.Time // requestReceivedTimestamp strictly after this
	Before          time.Time // requestReceivedTimestamp strictly before this
	Verb            string
	Namespace       string
	Resource        string
	Subresource     string
	Name            string
	Code            int
}

func (q *auditQuery) matches(e *auditEvent) bool {
	switch {
	case e.Stage != "" && e.Stage != "ResponseComplete" && e.Stage != "Panic":
		return false
	case q.UserAgentPrefix != "" && !strings.HasPrefix(e.UserAgent, q.UserAgentPrefix):
		return false
	case !q.After.IsZero() && !e.RequestReceivedTimestamp.After(q.After):
		return false
	case !q.Before.IsZero() && !e.RequestReceivedTimestamp.Before(q.Before):
		return false
	case q.Verb != "" && e.Verb != q.Verb:
		return false
	case q.Code != 0 && e.code() != q.Code:
		return false
	}
	if q.Namespace == "" && q.Resource == "" && q.Subresource == "" && q.Name == "" {
		return true
	}
	ref := e.ObjectRef
	return ref != nil &&
		(q.Namespace == "" || ref.Namespace == q.Namespace) &&
		(q.Resource == "" || ref.Resource == q.Resource) &&
		(q.Subresource == "" || ref.Subresource == q.Subresource) &&
		(q.Name == "" || ref.Name == q.Name)
}

// find returns the audit events that q selects, oldest first.
func (a *auditLog) find(q auditQuery) ([]auditEvent, error) {
	if a.err != nil {
		return nil, a.err
	}
	f, err := os.Open(a.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() >= a.offset {
		// Otherwise the log was rotated: read it all.
		if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
			return nil, err
		}
	}
	var found []auditEvent
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 && err == nil {
			var e auditEvent
			if jsonErr := json.Unmarshal(line, &e); jsonErr != nil {
				return nil, fmt.Errorf("%s: unreadable line %q: %w", a.path, line, jsonErr)
			}
			if q.matches(&e) {
				found = append(found, e)
			}
		}
		// A last line without a newline is still being written: skip it.
		if err == io.EOF {
			return found, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// openAuditLog finds the audit log of the cluster in kubeconfig and checks
// that it records that cluster's writes: written is the name of a namespace
// just created there. The log is, first found first:
//   - $E2E_AUDIT_LOG;
//   - $HOME/.kwok/clusters/NAME/logs/audit.log, NAME being $CLUSTER_NAME, or
//     else taken from the kubeconfig's kwok context ("kwok-NAME"), or else
//     robot-operator (hack/cluster.sh's default).
//
// It never fails: a log that cannot be used carries the reason, for the tests
// that need it.
func openAuditLog(kubeconfig string) *auditLog {
	a := &auditLog{path: os.Getenv("E2E_AUDIT_LOG")}
	if a.path == "" {
		name := os.Getenv("CLUSTER_NAME")
		if name == "" {
			if cfg, err := clientcmd.LoadFromFile(kubeconfig); err == nil {
				name, _ = strings.CutPrefix(cfg.CurrentContext, "kwok-")
			}
		}
		if name == "" {
			name = "robot-operator"
		}
		home, err := os.UserHomeDir()
		if err != nil {
			a.err = err
			return a
		}
		a.path = filepath.Join(home, ".kwok", "clusters", name, "logs", "audit.log")
	}
	info, err := os.Stat(a.path)
	if err != nil {
		a.err = fmt.Errorf("no audit log (set E2E_AUDIT_LOG or CLUSTER_NAME): %w", err)
		return a
	}
	a.offset = info.Size()
	return a
}

// verify checks that the log records the creation of the namespace ns,
// within a few seconds; it records why not otherwise.
func (a *auditLog) verify(ns string) {
	if a.err != nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, err := a.find(auditQuery{Verb: "create", Resource: "namespaces", Name: ns})
		if err != nil {
			a.err = err
			return
		}
		if len(events) > 0 {
			return
		}
		if time.Now().After(deadline) {
			a.err = fmt.Errorf("%s does not record the writes of the cluster under test (it has no entry for the creation of namespace %s): set E2E_AUDIT_LOG or CLUSTER_NAME", a.path, ns)
			return
		}
		time.Sleep(pollInterval)
	}
}
