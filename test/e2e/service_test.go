//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestServiceLifecycle: a Robot with a port gets an owned Service that
// selects its pods; a hand edit is reverted; a sync with nothing to do
// writes nothing; the type goes to NodePort, LoadBalancer and back,
// releasing the node port; None removes the Service; a new port replaces the old one;
// deleting the Robot lets the garbage collector remove it.
func TestServiceLifecycle(t *testing.T) {
	parallel(t)
	requireAuditLog(t)
	ns := newNamespace(t)
	robot := newRobot(ns, "web", 2)
	robot.Spec.Ports = httpPorts(8080)
	robot = createRobot(t, robot)

	s := waitForService(t, ns, "web", "exists", func(*corev1.Service) bool { return true })
	checkServiceControlledBy(t, s, robot)
	if s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.ClusterIP == "" {
		t.Errorf("Service type %q, clusterIP %q: want ClusterIP with an address", s.Spec.Type, s.Spec.ClusterIP)
	}
	wantPort := corev1.ServicePort{Name: portName, Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromString(portName)}
	if len(s.Spec.Ports) != 1 || s.Spec.Ports[0] != wantPort {
		t.Errorf("Service ports %+v, want [%+v]", s.Spec.Ports, wantPort)
	}
	if want := map[string]string{labelRobot: "web"}; !maps.Equal(s.Spec.Selector, want) {
		t.Errorf("Service selector %v, want %v", s.Spec.Selector, want)
	}
	if s.Labels[labelManagedBy] != labelManagedByValue {
		t.Errorf("Service labels %v, want %s=%s", s.Labels, labelManagedBy, labelManagedByValue)
	}

	robot = waitForRobotReady(t, ns, "web")
	robot = waitForRobot(t, ns, "web", convergeTimeout, "names its Service", func(r *robotv1beta1.Robot) bool { return r.Status.ServiceName == "web" })
	// The Service reaches exactly the Robot's pods.
	pods := waitForPods(t, ns, robot.Status.Selector, 2, image1)
	selected, err := env.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: labels.SelectorFromSet(s.Spec.Selector).String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(selected.Items) != len(pods) {
		t.Errorf("the Service selects %d pods, the Robot runs %d: %s", len(selected.Items), len(pods), summarizePods(selected.Items))
	}

	// A sync with nothing to do writes nothing: a change to the Robot's
	// metadata queues it.
	waitForRobot(t, ns, "web", convergeTimeout, "is settled", robotSettled)
	start := time.Now()
	mustKubectl(t, "annotate", "robot/web", "e2e.robot.dev/poke=1", "-n", ns)
	time.Sleep(5 * time.Second)
	checkNoServiceWrites(t, ns, "web", start)

	// A hand edit of fields the operator set, as kubectl edit does it.
	edited := time.Now()
	updateService(t, ns, "web", "e2e-hand-edit", func(s *corev1.Service) {
		s.Spec.Selector = map[string]string{"app": "elsewhere"}
		s.Spec.Ports[0].TargetPort = intstr.FromInt32(9999)
	})
	s = waitForService(t, ns, "web", "has its selector and target port back", func(s *corev1.Service) bool {
		return maps.Equal(s.Spec.Selector, map[string]string{labelRobot: "web"}) && len(s.Spec.Ports) == 1 && s.Spec.Ports[0] == wantPort
	})
	waitForEventMessage(t, ns, robot, "ServiceUpdated", `Updated Service "web": spec.`)
	time.Sleep(3 * time.Second)
	writes := operatorServiceWrites(t, ns, "web", edited)
	t.Logf("writes to revert the edit: %v", writes)
	// The first apply of a Service takes over the fields of its create
	// first: at most two writes, then none.
	if len(writes) == 0 || len(writes) > 2 {
		t.Errorf("%d writes of the Service after the edit, want 1 or 2: %v", len(writes), writes)
	}

	// NodePort, then back to ClusterIP: the node port is released.
	patchRobot(t, ns, "web", `{"spec":{"service":{"type":"NodePort"}}}`)
	s = waitForService(t, ns, "web", "is a NodePort with a node port", func(s *corev1.Service) bool {
		return s.Spec.Type == corev1.ServiceTypeNodePort && len(s.Spec.Ports) == 1 && s.Spec.Ports[0].NodePort != 0
	})
	t.Logf("node port %d", s.Spec.Ports[0].NodePort)
	// LoadBalancer: the API server defaults more (allocateLoadBalancerNodePorts),
	// none of which is the operator's; a sync with nothing to do writes
	// nothing. The cluster has no load balancer to give, which changes
	// nothing for the operator.
	patchRobot(t, ns, "web", `{"spec":{"service":{"type":"LoadBalancer"}}}`)
	waitForService(t, ns, "web", "is a LoadBalancer with a node port", func(s *corev1.Service) bool {
		return s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Spec.Ports) == 1 && s.Spec.Ports[0].NodePort != 0
	})
	waitForRobot(t, ns, "web", convergeTimeout, "is settled", robotSettled)
	start = time.Now()
	mustKubectl(t, "annotate", "robot/web", "e2e.robot.dev/poke=lb", "--overwrite", "-n", ns)
	time.Sleep(5 * time.Second)
	checkNoServiceWrites(t, ns, "web", start)
	patchRobot(t, ns, "web", `{"spec":{"service":{"type":"ClusterIP"}}}`)
	s = waitForService(t, ns, "web", "is a ClusterIP again, without a node port", func(s *corev1.Service) bool {
		return s.Spec.Type == corev1.ServiceTypeClusterIP && len(s.Spec.Ports) == 1 && s.Spec.Ports[0].NodePort == 0
	})
	if s.Spec.Ports[0] != wantPort || s.Spec.ExternalTrafficPolicy != "" || s.Spec.AllocateLoadBalancerNodePorts != nil {
		t.Errorf("Service ports %+v, externalTrafficPolicy %q, allocateLoadBalancerNodePorts %v after going back to ClusterIP; want [%+v] and neither",
			s.Spec.Ports, s.Spec.ExternalTrafficPolicy, s.Spec.AllocateLoadBalancerNodePorts, wantPort)
	}
	robot = waitForRobot(t, ns, "web", convergeTimeout, "is settled", robotSettled)
	start = time.Now()
	mustKubectl(t, "annotate", "robot/web", "e2e.robot.dev/poke=2", "--overwrite", "-n", ns)
	time.Sleep(5 * time.Second)
	checkNoServiceWrites(t, ns, "web", start)

	// None: no Service, and the status says so.
	patchRobot(t, ns, "web", `{"spec":{"service":{"type":"None"}}}`)
	waitForServiceGone(t, ns, "web")
	waitForRobot(t, ns, "web", convergeTimeout, "names no Service", func(r *robotv1beta1.Robot) bool {
		return r.Status.ServiceName == "" && r.Status.ObservedGeneration == r.Generation
	})
	waitForEvents(t, ns, robot.UID, "ServiceDeleted", 1)

	// Back, with another port: the Service, created again, then applied,
	// keeps no trace of the port its create set.
	patchRobot(t, ns, "web", `{"spec":{"service":{"type":"ClusterIP"}}}`)
	s = waitForService(t, ns, "web", "exists again", func(*corev1.Service) bool { return true })
	checkServiceControlledBy(t, s, robot)
	patchRobot(t, ns, "web", `{"spec":{"ports":[{"name":"http","containerPort":9090}]}}`)
	s = waitForService(t, ns, "web", "has port 9090 and no other", func(s *corev1.Service) bool {
		return len(s.Spec.Ports) == 1 && s.Spec.Ports[0].Port == 9090
	})
	if want := (corev1.ServicePort{Name: portName, Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromString(portName)}); s.Spec.Ports[0] != want {
		t.Errorf("Service port %+v, want %+v", s.Spec.Ports[0], want)
	}

	// The Robot goes: the garbage collector removes the Service.
	if err := env.robots.RobotV1beta1().Robots(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Robot %s/web: %v", ns, err)
	}
	waitForServiceGone(t, ns, "web")
}

// TestServiceNameTaken: a Robot whose Service name is taken by a Service it
// does not control leaves that Service alone, runs all the same (Ready),
// says why in Synced with one Warning, and gets its Service soon after the
// name is free.
func TestServiceNameTaken(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	theirs, err := env.kube.CoreV1().Services(ns).Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "someone-else"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "someone-else"},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating someone else's Service %s/web: %v", ns, err)
	}

	robot := newRobot(ns, "web", 1)
	robot.Spec.Ports = httpPorts(8080)
	robot = createRobot(t, robot)
	robot = waitForRobot(t, ns, "web", convergeTimeout, "is Ready and reports the Service name taken", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return robotConverged(r) && synced != nil && synced.Status == metav1.ConditionFalse && synced.Reason == robotv1beta1.ReasonServiceNameTaken
	})
	if robot.Status.ServiceName != "" {
		t.Errorf("status.serviceName %q while the Service is someone else's", robot.Status.ServiceName)
	}
	waitForEvents(t, ns, robot.UID, robotv1beta1.ReasonServiceNameTaken, 1)

	// Some seconds on: theirs is untouched, and the Robot said so once.
	time.Sleep(5 * time.Second)
	now, err := env.kube.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.ResourceVersion != theirs.ResourceVersion || metav1.GetControllerOf(now) != nil {
		t.Errorf("someone else's Service changed: resourceVersion %s -> %s, controller %s", theirs.ResourceVersion, now.ResourceVersion, describeOwner(metav1.GetControllerOf(now)))
	}
	events, err := robotEvents(t.Context(), ns, robot.UID, robotv1beta1.ReasonServiceNameTaken)
	if err != nil {
		t.Fatal(err)
	}
	if n := eventCount(events); n != 1 || events[0].Type != corev1.EventTypeWarning {
		t.Errorf("want exactly one Warning %s, got %s", robotv1beta1.ReasonServiceNameTaken, summarizeEvents(events))
	}

	// Free the name: the Robot gets its Service within its recheck period.
	if err := env.kube.CoreV1().Services(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting someone else's Service: %v", err)
	}
	robot = waitForRobot(t, ns, "web", 60*time.Second, "has its Service and is synced", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return r.Status.ServiceName == "web" && synced != nil && synced.Status == metav1.ConditionTrue
	})
	s := waitForService(t, ns, "web", "exists", func(*corev1.Service) bool { return true })
	checkServiceControlledBy(t, s, robot)
}

// waitForService waits until Service ns/name exists and done says so.
func waitForService(t *testing.T, ns, name, what string, done func(*corev1.Service) bool) *corev1.Service {
	t.Helper()
	var service *corev1.Service
	eventually(t, convergeTimeout, fmt.Sprintf("Service %s/%s %s", ns, name, what), func(ctx context.Context) (bool, string, error) {
		s, err := env.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not found", nil
		}
		if err != nil {
			return false, "", err
		}
		service = s
		return done(s), fmt.Sprintf("type %s, selector %v, ports %+v", s.Spec.Type, s.Spec.Selector, s.Spec.Ports), nil
	})
	return service
}

// waitForServiceGone waits until Service ns/name does not exist.
func waitForServiceGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, convergeTimeout, fmt.Sprintf("Service %s/%s is gone", ns, name), func(ctx context.Context) (bool, string, error) {
		s, err := env.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "not found", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("exists, deletionTimestamp %v", s.DeletionTimestamp), nil
	})
}

// checkServiceControlledBy fails the test unless the Service's controller
// is the Robot, with blockOwnerDeletion.
func checkServiceControlledBy(t *testing.T, s *corev1.Service, robot *robotv1beta1.Robot) {
	t.Helper()
	ref := metav1.GetControllerOf(s)
	if ref == nil || ref.APIVersion != robotv1beta1.SchemeGroupVersion.String() || ref.Kind != "Robot" ||
		ref.Name != robot.Name || ref.UID != robot.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("Service %s/%s controller = %s, want Robot %s uid %s, with blockOwnerDeletion", s.Namespace, s.Name, describeOwner(ref), robot.Name, robot.UID)
	}
}

// updateService changes Service ns/name with a plain update as manager.
func updateService(t *testing.T, ns, name, manager string, edit func(*corev1.Service)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := env.kube.CoreV1().Services(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(s)
		_, err = env.kube.CoreV1().Services(ns).Update(t.Context(), s, metav1.UpdateOptions{FieldManager: manager})
		return err
	})
	if err != nil {
		t.Fatalf("updating Service %s/%s: %v", ns, name, err)
	}
}

// operatorServiceWrites returns the operator's requests that changed
// Service ns/name after since, per the audit log.
func operatorServiceWrites(t *testing.T, ns, name string, since time.Time) []string {
	t.Helper()
	events, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: since, Namespace: ns, Resource: "services", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, e := range events {
		switch e.Verb {
		case "get", "list", "watch":
			continue
		}
		writes = append(writes, e.String())
	}
	return writes
}

// checkNoServiceWrites fails the test if the operator wrote Service ns/name
// after since.
func checkNoServiceWrites(t *testing.T, ns, name string, since time.Time) {
	t.Helper()
	if writes := operatorServiceWrites(t, ns, name, since); len(writes) > 0 {
		t.Errorf("the operator wrote Service %s/%s with nothing to do: %v", ns, name, writes)
	}
}
