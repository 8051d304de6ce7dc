//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// someoneElsesDeployment is a Deployment that another tool makes: no
// controller, a label of its own. It selects its pods by the label that the
// operator would use, as a copy of a Robot's Deployment would, so that nothing
// but ownership keeps an apply of the Robot's Deployment from merging into it
// (a different selector would make the apply fail: it is immutable).
func someoneElsesDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": "someone-else", labelRobot: name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{labelRobot: name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
}

// startOperatorThroughProxy pauses the shared operator and starts one of the
// test's own, named name, that reaches the API server through a holding proxy,
// and returns both. The proxy's requests are printed if the test fails.
func startOperatorThroughProxy(t *testing.T, name string) (*operator, *holdingProxy) {
	t.Helper()
	pauseSharedOperator(t)
	args, proxy := holdingAPIServerArgs(t, sharedArgs())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the requests the proxy held: %v", proxy.heldRequests())
		}
	})
	o := extraOperator(t, name, args)
	if err := o.start(); err != nil {
		t.Fatal(err)
	}
	return o, proxy
}

// TestDeploymentCreatedInTheWindowIsLeftAlone: a Deployment that someone
// else creates after the operator found none of the Robot's name and before
// it writes one is never written by the operator: the Robot reports the name
// taken, and the other Deployment stays as its owner made it. A proxy holds
// the operator's first write of the Deployment, so the window stays open
// while the other Deployment is created.
func TestDeploymentCreatedInTheWindowIsLeftAlone(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs one of its own through a proxy")
	requireAuditLog(t)
	o, proxy := startOperatorThroughProxy(t, "create-window")
	ns := newNamespace(t)

	// Any write of Deployment web: a create (to the collection) or an
	// apply or update (to the object).
	collection := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	proxy.hold(func(r *http.Request) bool {
		return r.Method != http.MethodGet && (r.URL.Path == collection || r.URL.Path == collection+"/web")
	})
	start := time.Now()
	robot := createRobot(t, newRobot(ns, "web", 1))
	eventually(t, convergeTimeout, "the operator's first write of Deployment web is held", func(context.Context) (bool, string, error) {
		held := proxy.heldRequests()
		return len(held) > 0, fmt.Sprint(held), nil
	})

	theirs, err := env.kube.AppsV1().Deployments(ns).Create(t.Context(), someoneElsesDeployment(ns, "web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating someone else's Deployment %s/web: %v", ns, err)
	}
	created := time.Now()
	proxy.release()
	t.Logf("held, then let through: %v", proxy.heldRequests())

	// The sync that was held reports what it found.
	robot = waitForRobot(t, ns, "web", convergeTimeout, "reports on its Deployment", func(r *robotv1beta1.Robot) bool {
		c := readyCondition(r)
		return c != nil && c.ObservedGeneration == r.Generation
	})
	if c := readyCondition(robot); c.Reason != robotv1beta1.ReasonDeploymentNameTaken {
		t.Errorf("Ready reason %s (%q), want %s", c.Reason, c.Message, robotv1beta1.ReasonDeploymentNameTaken)
	}

	// Some seconds on, theirs is still as they made it.
	time.Sleep(5 * time.Second)
	now := getDeployment(t, ns, "web")
	if now.UID != theirs.UID || !maps.Equal(now.Labels, theirs.Labels) || metav1.GetControllerOf(now) != nil ||
		len(now.Spec.Template.Spec.Containers) != 1 || now.Spec.Template.Spec.Containers[0].Name != "app" {
		t.Errorf("someone else's Deployment changed: labels %v -> %v, controller %s, containers %s",
			theirs.Labels, now.Labels, describeOwner(metav1.GetControllerOf(now)), summarizeDeployment(now))
	}
	for _, entry := range now.ManagedFields {
		if entry.Manager == fieldManager {
			t.Errorf("someone else's Deployment has fields managed by %s: %s %s", fieldManager, entry.Operation, entry.FieldsV1)
		}
	}
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Namespace: ns, Resource: "deployments", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		switch {
		case w.refusedCreate():
			t.Logf("refused, as it should be: %s", &w)
		case w.RequestReceivedTimestamp.Before(created):
			// Held by the proxy until after theirs was created, so the API
			// server cannot have received it before.
			t.Errorf("a write before someone else's Deployment was created: %s", &w)
		default:
			t.Errorf("the operator wrote someone else's Deployment: %s", &w)
		}
	}
	if c := readyCondition(getRobot(t, ns, "web")); c == nil || c.Reason != robotv1beta1.ReasonDeploymentNameTaken {
		t.Errorf("Robot %s/web: %s; want it to report %s", ns, summarizeRobot(getRobot(t, ns, "web")), robotv1beta1.ReasonDeploymentNameTaken)
	}
	terminate(t, o)
	waitExitedCleanly(t, o, 40*time.Second)
}

// TestNewRobotWritesItsDeploymentOnce: for a new Robot the operator makes
// one request about its Deployment, the create: no read before it, and no
// second write.
func TestNewRobotWritesItsDeploymentOnce(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs one of its own through a proxy")
	requireAuditLog(t)
	o, proxy := startOperatorThroughProxy(t, "create-once")
	ns := newNamespace(t)
	start := time.Now()
	names := []string{"alpha", "beta", "gamma"}
	for _, name := range names {
		robot := newRobot(ns, name, 1)
		robot.Spec.Args = []string{"--name", name}
		robot.Spec.Env = []corev1.EnvVar{{Name: "ROBOT", Value: name}}
		createRobot(t, robot)
	}
	for _, name := range names {
		waitForRobot(t, ns, name, convergeTimeout, "is settled", robotSettled)
	}
	// Late requests, if any, have come by now.
	time.Sleep(3 * time.Second)

	collection := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	var reads []string
	for _, r := range proxy.requests() {
		if strings.HasPrefix(r, http.MethodGet+" "+collection+"/") {
			reads = append(reads, r)
		}
	}
	if len(reads) > 0 {
		t.Errorf("the operator read Deployments of new Robots: %q", reads)
	}
	for _, name := range names {
		writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Namespace: ns, Resource: "deployments", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(writes) != 1 || writes[0].Verb != "create" || writes[0].code() != http.StatusCreated {
			t.Errorf("Deployment %s: the operator's writes: %s; want one create, answered %d", name, describeAuditEvents(writes), http.StatusCreated)
		}
	}
	terminate(t, o)
	waitExitedCleanly(t, o, 40*time.Second)
}

// TestDroppedFieldsLeaveTheDeployment: what a Robot asked for when its
// Deployment was created and no longer asks for goes from the Deployment,
// whatever happened in between: args, an env var, a port.
func TestDroppedFieldsLeaveTheDeployment(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	robotPatch := func(what, patch string) change {
		return change{what, func(t *testing.T, name string) { patchRobot(t, ns, name, patch) }}
	}
	dropArgs := robotPatch("args removed", `{"spec":{"args":null}}`)
	noArgs := func(d *appsv1.Deployment, c *corev1.Container) bool { return len(c.Args) == 0 }
	cases := []struct {
		name    string
		created func(*robotv1beta1.Robot)
		changes []change
		want    func(*appsv1.Deployment, *corev1.Container) bool
	}{
		{
			name:    "args",
			created: func(r *robotv1beta1.Robot) { r.Spec.Args = []string{"--greeting", "hello"} },
			changes: []change{dropArgs},
			want:    noArgs,
		},
		{
			name: "env",
			created: func(r *robotv1beta1.Robot) {
				r.Spec.Env = []corev1.EnvVar{{Name: "KEEP", Value: "1"}, {Name: "DROP", Value: "2"}}
			},
			changes: []change{robotPatch("env var DROP removed", `{"spec":{"env":[{"name":"KEEP","value":"1"}]}}`)},
			want: func(_ *appsv1.Deployment, c *corev1.Container) bool {
				return len(c.Env) == 1 && c.Env[0].Name == "KEEP"
			},
		},
		{
			name:    "port",
			created: func(r *robotv1beta1.Robot) { r.Spec.Ports = httpPorts(8080) },
			changes: []change{robotPatch("ports removed", `{"spec":{"ports":null}}`)},
			want:    func(_ *appsv1.Deployment, c *corev1.Container) bool { return len(c.Ports) == 0 },
		},
		{
			name:    "args-after-image",
			created: func(r *robotv1beta1.Robot) { r.Spec.Args = []string{"--greeting", "hello"} },
			changes: []change{robotPatch("image changed", fmt.Sprintf(`{"spec":{"image":%q}}`, image2)), dropArgs},
			want: func(_ *appsv1.Deployment, c *corev1.Container) bool {
				return len(c.Args) == 0 && c.Image == image2
			},
		},
		{
			name:    "args-after-scale",
			created: func(r *robotv1beta1.Robot) { r.Spec.Args = []string{"--greeting", "hello"} },
			changes: []change{
				{"scaled by someone else, and scaled back by the operator", func(t *testing.T, name string) {
					mustKubectl(t, "scale", "deployment/"+name, "--replicas=3", "-n", ns)
					waitForDeployment(t, ns, name, "is back at 1 replica", func(d *appsv1.Deployment) bool {
						return ptr.Deref(d.Spec.Replicas, 1) == 1 && d.Generation > 2
					})
				}},
				dropArgs,
			},
			want: noArgs,
		},
	}
	for _, tc := range cases {
		robot := newRobot(ns, tc.name, 1)
		tc.created(robot)
		createRobot(t, robot)
	}
	for _, tc := range cases {
		waitForRobot(t, ns, tc.name, convergeTimeout, "is settled", robotSettled)
	}
	changed := time.Now()
	for _, tc := range cases {
		for i, c := range tc.changes {
			c.apply(t, tc.name)
			if i < len(tc.changes)-1 {
				waitForRobotReady(t, ns, tc.name)
			}
		}
	}
	for _, tc := range cases {
		what := fmt.Sprintf("Deployment %s/%s, after %s", ns, tc.name, describeChanges(tc.changes))
		eventually(t, convergeTimeout, what+", has what the Robot asks for and nothing it asked for before", func(ctx context.Context) (bool, string, error) {
			d, err := env.kube.AppsV1().Deployments(ns).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			c := robotContainer(t, d)
			return tc.want(d, c), describeContainer(d, c), nil
		})
		waitForRobotReady(t, ns, tc.name)
		writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: changed, Namespace: ns, Resource: "deployments", Name: tc.name})
		if err != nil {
			t.Logf("%s: cannot list the operator's writes: %v", what, err)
			continue
		}
		t.Logf("%s: the operator's writes since the first change: %s", what, describeAuditEvents(writes))
	}
}

// change is something a test does to a Robot named name, or to its
// Deployment.
type change struct {
	what  string
	apply func(t *testing.T, name string)
}

// describeAuditEvents describes audit events, one a line, with their query
// (an apply has force=true).
func describeAuditEvents(events []auditEvent) string {
	if len(events) == 0 {
		return "none"
	}
	var b strings.Builder
	for i := range events {
		_, query, _ := strings.Cut(events[i].RequestURI, "?")
		fmt.Fprintf(&b, "\n  %s ?%s", &events[i], query)
	}
	return b.String()
}

func describeChanges(changes []change) string {
	var whats []string
	for _, c := range changes {
		whats = append(whats, c.what)
	}
	return strings.Join(whats, ", then ")
}

// describeContainer describes the Robot's container and who manages the
// Deployment's fields.
func describeContainer(d *appsv1.Deployment, c *corev1.Container) string {
	var managers []string
	for _, e := range d.ManagedFields {
		managers = append(managers, strings.TrimSuffix(e.Manager+"/"+string(e.Operation)+"/"+e.Subresource, "/"))
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
	}
	slices.Sort(env)
	return fmt.Sprintf("image %s, args %q, env %v, ports %d; managedFields %v", c.Image, c.Args, env, len(c.Ports), managers)
}
