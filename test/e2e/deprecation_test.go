//go:build e2e

package e2e

import (
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// warnings records the warnings the API server sends a client.
type warnings struct {
	mu   sync.Mutex
	text []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.text, "; ")
}

// TestV1alpha1IsDeprecated: a request through v1alpha1 gets the API
// server's deprecation warning, which names v1beta1, and kubectl prints it;
// a request through v1beta1 gets none.
func TestV1alpha1IsDeprecated(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	waitForConversion(t, ns)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var alpha, beta warnings
	alphaCfg, betaCfg := *cfg, *cfg
	alphaCfg.WarningHandler, betaCfg.WarningHandler = &alpha, &beta
	alphaClient, err := versioned.NewForConfig(&alphaCfg)
	if err != nil {
		t.Fatal(err)
	}
	betaClient, err := versioned.NewForConfig(&betaCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alphaClient.RobotV1alpha1().Robots(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := betaClient.RobotV1beta1().Robots(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := alpha.String(); !strings.Contains(got, "robot.dev/v1alpha1 Robot is deprecated; use robot.dev/v1beta1") {
		t.Errorf("warnings of a v1alpha1 list: %q, want the deprecation, naming robot.dev/v1beta1", got)
	}
	if got := beta.String(); got != "" {
		t.Errorf("warnings of a v1beta1 list: %q, want none", got)
	}
	_, stderr, err := kubectl(t.Context(), "", "get", "-n", ns, "robots.v1alpha1.robot.dev")
	if err != nil || !strings.Contains(stderr, "Warning: robot.dev/v1alpha1 Robot is deprecated") {
		t.Errorf("kubectl get robots.v1alpha1.robot.dev: %v, stderr %q; want the deprecation warning", err, stderr)
	}
}
