//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
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
// does not control leaves that Service alone, runs all the same, says why
// in Synced and Ready (Stalled: it waits on a person) with one Warning, and
// gets its Service soon after the name is free.
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
	robot = waitForRobot(t, ns, "web", convergeTimeout, "runs and reports the Service name taken, Stalled", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		ready, stalled := readyCondition(r), meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionStalled)
		return r.Status.AvailableReplicas == 1 && synced != nil && synced.Status == metav1.ConditionFalse && synced.Reason == robotv1beta1.ReasonServiceNameTaken &&
			ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == robotv1beta1.ReasonServiceNameTaken &&
			stalled != nil && stalled.Status == metav1.ConditionTrue
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
	waitForRobotReady(t, ns, "web")
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
	return operatorWrites(t, ns, "services", name, since)
}

// operatorWrites returns the operator's requests that changed the object
// ns/name of resource after since, per the audit log.
func operatorWrites(t *testing.T, ns, resource, name string, since time.Time) []string {
	t.Helper()
	events, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: since, Namespace: ns, Resource: resource, Name: name})
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

// TestServiceMetadata: the annotations, labels and traffic fields of a
// Robot's Service are on it from its create (some clouds read their load
// balancer's annotations only then); the operator owns those keys only: a
// cloud controller's annotation and label (written by another field
// manager, as kubectl annotate does) survive its syncs and a change of the
// Robot, a key removed from the Robot leaves the Service, and a key of the
// Robot's edited by hand is put back.
func TestServiceMetadata(t *testing.T) {
	parallel(t)
	requireAuditLog(t)
	ns := newNamespace(t)
	robot := newRobot(ns, "edge", 1)
	robot.Spec.Ports = httpPorts(8080)
	robot.Spec.Service = &robotv1beta1.RobotService{
		Type:                     robotv1beta1.ServiceTypeLoadBalancer,
		Annotations:              map[string]string{"example.com/scheme": "internal", "example.com/keep": "a"},
		Labels:                   map[string]string{"team": "blue"},
		ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
		InternalTrafficPolicy:    corev1.ServiceInternalTrafficPolicyLocal,
		LoadBalancerSourceRanges: []string{"10.0.0.0/8", "2001:db8::/32"},
		LoadBalancerClass:        "example.com/lb-a",
	}
	created := time.Now()
	robot = createRobot(t, robot)

	s := waitForService(t, ns, "edge", "exists", func(*corev1.Service) bool { return true })
	// The operator's only write so far is the create, so what the Service
	// holds of the Robot's came with it.
	if writes := operatorServiceWrites(t, ns, "edge", created); len(writes) != 1 || !strings.Contains(writes[0], " create ") {
		t.Errorf("the operator's writes of the Service: %v, want its create alone", writes)
	}
	if s.Annotations["example.com/scheme"] != "internal" || s.Annotations["example.com/keep"] != "a" || s.Labels["team"] != "blue" ||
		s.Labels[labelManagedBy] != labelManagedByValue {
		t.Errorf("Service annotations %v, labels %v: want the Robot's and the operator's", s.Annotations, s.Labels)
	}
	if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || ptr.Deref(s.Spec.InternalTrafficPolicy, "") != corev1.ServiceInternalTrafficPolicyLocal ||
		!slices.Equal(s.Spec.LoadBalancerSourceRanges, []string{"10.0.0.0/8", "2001:db8::/32"}) || ptr.Deref(s.Spec.LoadBalancerClass, "") != "example.com/lb-a" {
		t.Errorf("Service spec %+v: want the Robot's traffic fields", s.Spec)
	}
	if s.Spec.HealthCheckNodePort == 0 {
		t.Errorf("no healthCheckNodePort: the API server allocates one for a LoadBalancer with externalTrafficPolicy Local")
	}

	// A cloud controller's annotation and label, by another field manager:
	// no drift, so nothing written.
	waitForRobot(t, ns, "edge", convergeTimeout, "is settled", robotSettled)
	foreign := time.Now()
	mustKubectl(t, "annotate", "service/edge", "cloud.example.com/load-balancer-id=lb-123", "-n", ns)
	mustKubectl(t, "label", "service/edge", "cloud.example.com/zone=a", "-n", ns)
	mustKubectl(t, "annotate", "robot/edge", "e2e.robot.dev/poke=1", "-n", ns)
	time.Sleep(5 * time.Second)
	checkNoServiceWrites(t, ns, "edge", foreign)

	// The Robot drops one annotation and changes another: the dropped one
	// leaves the Service, the cloud's stay.
	patchRobot(t, ns, "edge", `{"spec":{"service":{"annotations":{"example.com/keep":null,"example.com/scheme":"external"}}}}`)
	s = waitForService(t, ns, "edge", "has the Robot's new annotations", func(s *corev1.Service) bool {
		_, kept := s.Annotations["example.com/keep"]
		return !kept && s.Annotations["example.com/scheme"] == "external"
	})
	if s.Annotations["cloud.example.com/load-balancer-id"] != "lb-123" || s.Labels["cloud.example.com/zone"] != "a" {
		t.Errorf("the cloud's annotation or label is gone after the Robot changed: annotations %v, labels %v", s.Annotations, s.Labels)
	}

	// A hand edit of an annotation and a label the Robot sets: put back,
	// the cloud's kept.
	mustKubectl(t, "annotate", "service/edge", "example.com/scheme=hacked", "--overwrite", "-n", ns)
	mustKubectl(t, "label", "service/edge", "team=red", "--overwrite", "-n", ns)
	s = waitForService(t, ns, "edge", "has the Robot's annotation and label back", func(s *corev1.Service) bool {
		return s.Annotations["example.com/scheme"] == "external" && s.Labels["team"] == "blue"
	})
	if s.Annotations["cloud.example.com/load-balancer-id"] != "lb-123" || s.Labels["cloud.example.com/zone"] != "a" {
		t.Errorf("the cloud's annotation or label is gone after the revert: annotations %v, labels %v", s.Annotations, s.Labels)
	}
	waitForEventMessage(t, ns, robot, "ServiceUpdated", "example.com/scheme")

	// The traffic fields the Robot stops setting go back to the API
	// server's defaults; the label it drops leaves.
	patchRobot(t, ns, "edge", `{"spec":{"service":{"labels":null,"externalTrafficPolicy":null,"internalTrafficPolicy":null,"loadBalancerSourceRanges":null}}}`)
	s = waitForService(t, ns, "edge", "has the defaults back", func(s *corev1.Service) bool {
		_, team := s.Labels["team"]
		return !team && s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyCluster &&
			ptr.Deref(s.Spec.InternalTrafficPolicy, "") == corev1.ServiceInternalTrafficPolicyCluster && len(s.Spec.LoadBalancerSourceRanges) == 0
	})
	if s.Annotations["cloud.example.com/load-balancer-id"] != "lb-123" || s.Labels["cloud.example.com/zone"] != "a" || s.Labels[labelManagedBy] != labelManagedByValue {
		t.Errorf("annotations %v, labels %v after the Robot dropped its label: want the cloud's and the operator's", s.Annotations, s.Labels)
	}
	waitForRobot(t, ns, "edge", convergeTimeout, "is synced", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return r.Status.ObservedGeneration == r.Generation && synced != nil && synced.Status == metav1.ConditionTrue
	})
}

// TestServiceLoadBalancerClass: a Service's loadBalancerClass cannot change
// once set. A Robot that asks for another gets no write to its Service, and
// says how to proceed (Synced=False, LoadBalancerClassImmutable, with one
// Warning); deleting the Service gets it created again with the new class.
// A class the Robot stops asking for is refused by the API server once, not
// again and again; going to another type takes the class away.
func TestServiceLoadBalancerClass(t *testing.T) {
	parallel(t)
	requireAuditLog(t)
	ns := newNamespace(t)
	robot := newRobot(ns, "lb", 1)
	robot.Spec.Ports = httpPorts(8080)
	robot.Spec.Service = &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeLoadBalancer, LoadBalancerClass: "example.com/lb-a"}
	robot = createRobot(t, robot)
	first := waitForService(t, ns, "lb", "has class a", func(s *corev1.Service) bool { return ptr.Deref(s.Spec.LoadBalancerClass, "") == "example.com/lb-a" })
	waitForRobot(t, ns, "lb", convergeTimeout, "is settled", robotSettled)

	immutable := func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return r.Status.ObservedGeneration == r.Generation && synced != nil && synced.Status == metav1.ConditionFalse &&
			synced.Reason == robotv1beta1.ReasonLoadBalancerClassImmutable
	}
	changed := time.Now()
	patchRobot(t, ns, "lb", `{"spec":{"service":{"loadBalancerClass":"example.com/lb-b"}}}`)
	robot = waitForRobot(t, ns, "lb", convergeTimeout, "reports the class immutable", immutable)
	synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced)
	if want := "kubectl delete service -n " + ns + " lb"; !strings.Contains(synced.Message, want) || !strings.Contains(synced.Message, `"example.com/lb-a"`) {
		t.Errorf("Synced message %q: want the Service's class and %q", synced.Message, want)
	}
	if ready := readyCondition(robot); ready == nil || ready.Status != metav1.ConditionTrue || robot.Status.ServiceName != "lb" {
		t.Errorf("Ready %v, serviceName %q: the Deployment runs and the Service is there", ready, robot.Status.ServiceName)
	}
	waitForEvents(t, ns, robot.UID, robotv1beta1.ReasonLoadBalancerClassImmutable, 1)
	time.Sleep(3 * time.Second)
	checkNoServiceWrites(t, ns, "lb", changed)
	if s := waitForService(t, ns, "lb", "exists", func(*corev1.Service) bool { return true }); s.UID != first.UID || ptr.Deref(s.Spec.LoadBalancerClass, "") != "example.com/lb-a" {
		t.Errorf("the Service changed: uid %s -> %s, class %v", first.UID, s.UID, s.Spec.LoadBalancerClass)
	}

	// The way out the message gives: the Service is created again at
	// once, with the new class.
	if err := env.kube.CoreV1().Services(ns).Delete(t.Context(), "lb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second := waitForService(t, ns, "lb", "exists again with class b", func(s *corev1.Service) bool {
		return s.UID != first.UID && ptr.Deref(s.Spec.LoadBalancerClass, "") == "example.com/lb-b"
	})
	checkServiceControlledBy(t, second, robot)
	waitForRobot(t, ns, "lb", convergeTimeout, "is synced again", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return synced != nil && synced.Status == metav1.ConditionTrue && r.Status.ServiceName == "lb"
	})
	waitForRobot(t, ns, "lb", convergeTimeout, "is settled", robotSettled)

	// No class any more, still a LoadBalancer: the operator set the class,
	// so its apply would remove it, which the API server refuses. Said
	// once, not sent again: not by the syncs that the Robot's pods cause.
	dropped := time.Now()
	patchRobot(t, ns, "lb", `{"spec":{"service":{"loadBalancerClass":null}}}`)
	waitForRobot(t, ns, "lb", convergeTimeout, "reports the class immutable", immutable)
	patchRobot(t, ns, "lb", `{"metadata":{"annotations":{"e2e.robot.dev/poke":"1"}}}`)
	time.Sleep(5 * time.Second)
	if writes := operatorServiceWrites(t, ns, "lb", dropped); len(writes) > 2 {
		t.Errorf("%d writes of the Service after the class was dropped, want at most the claim and the refused apply: %v", len(writes), writes)
	}

	// Another type: the class goes with the load balancer.
	patchRobot(t, ns, "lb", `{"spec":{"service":{"type":"ClusterIP"}}}`)
	waitForService(t, ns, "lb", "is a ClusterIP without a class", func(s *corev1.Service) bool {
		return s.Spec.Type == corev1.ServiceTypeClusterIP && s.Spec.LoadBalancerClass == nil
	})
	waitForRobot(t, ns, "lb", convergeTimeout, "is synced", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return r.Status.ObservedGeneration == r.Generation && synced != nil && synced.Status == metav1.ConditionTrue
	})
}

// TestServiceAnnotationKeyInvalid: the CRD refuses an annotation key that
// Kubernetes refuses (TestInvalidRobotsAreRejected). A Robot stored with one
// before that rule existed gets its Deployment and runs; the operator
// reports the key (Synced=False, InvalidSpec) without sending the Service
// the API server would refuse.
func TestServiceAnnotationKeyInvalid(t *testing.T) {
	exclusive(t, "it loosens the Robot CRD's schema to store a Robot with an annotation key the CRD refuses")
	ns := newNamespace(t)
	robot := newRobot(ns, "badkey", 1)
	robot.Spec.Ports = httpPorts(8080)
	robot.Spec.Service = &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeClusterIP, Annotations: map[string]string{"not a key": "x"}}
	withoutRobotSchema(t, func() { createRobot(t, robot) })
	robot = waitForRobot(t, ns, "badkey", convergeTimeout, "reports the key, and runs", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return synced != nil && synced.Reason == robotv1beta1.ReasonInvalidSpec && strings.Contains(synced.Message, `spec.service.annotations: Invalid value: "not a key"`) &&
			r.Status.AvailableReplicas == 1
	})
	if _, err := env.kube.CoreV1().Services(ns).Get(t.Context(), "badkey", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service %s/badkey: %v, want none", ns, err)
	}
}
