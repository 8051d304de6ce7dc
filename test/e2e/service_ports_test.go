//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// beforeServicePorts is the last commit whose operator had no servicePort
// nor nodePort: the upgrade check runs it, built from git history.
const beforeServicePorts = "d3c1a2b7078a4898db980aa7738ae49bc50d37e9"

// TestServicePortChangesTheServiceAlone: a port's servicePort is the
// Service's port, which targets the container's port by name; the
// container keeps its number. Changing servicePort updates the Service in
// place and leaves the Deployment as it is: no write, no rollout.
func TestServicePortChangesTheServiceAlone(t *testing.T) {
	parallel(t)
	requireAuditLog(t)
	ns := newNamespace(t)
	robot := newRobot(ns, "web", 1)
	robot.Spec.Ports = []robotv1beta1.RobotPort{{Name: portName, ContainerPort: 8080, ServicePort: 80, Protocol: corev1.ProtocolTCP}}
	robot = createRobot(t, robot)

	want := corev1.ServicePort{Name: portName, Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString(portName)}
	s := waitForService(t, ns, "web", "is on port 80", func(s *corev1.Service) bool { return len(s.Spec.Ports) == 1 && s.Spec.Ports[0].Port == 80 })
	if s.Spec.Ports[0] != want {
		t.Errorf("Service port %+v, want %+v", s.Spec.Ports[0], want)
	}
	waitForRobot(t, ns, "web", convergeTimeout, "is settled", robotSettled)
	before := getDeployment(t, ns, "web")
	if c := robotContainer(t, before); len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 || c.Ports[0].Name != portName {
		t.Errorf("the container's ports %+v, want %s on 8080", c.Ports, portName)
	}

	changed := time.Now()
	patchRobot(t, ns, "web", `{"spec":{"ports":[{"name":"http","containerPort":8080,"servicePort":8081}]}}`)
	after := waitForService(t, ns, "web", "is on port 8081", func(s *corev1.Service) bool { return len(s.Spec.Ports) == 1 && s.Spec.Ports[0].Port == 8081 })
	want.Port = 8081
	if after.Spec.Ports[0] != want {
		t.Errorf("Service port %+v, want %+v", after.Spec.Ports[0], want)
	}
	if after.UID != s.UID || after.Spec.ClusterIP != s.Spec.ClusterIP {
		t.Errorf("the Service was replaced: UID %s, clusterIP %s; before %s, %s", after.UID, after.Spec.ClusterIP, s.UID, s.Spec.ClusterIP)
	}
	waitForRobot(t, ns, "web", convergeTimeout, "is settled with the new port", robotSettled)
	d := getDeployment(t, ns, "web")
	if d.Generation != before.Generation || !apiequality.Semantic.DeepEqual(d.Spec.Template, before.Spec.Template) {
		t.Errorf("the Deployment changed with the Service's port: generation %d, before %d", d.Generation, before.Generation)
	}
	if writes := operatorWrites(t, ns, "deployments", "web", changed); len(writes) > 0 {
		t.Errorf("the operator wrote the Deployment for a change of the Service's port: %v", writes)
	}
	if writes := operatorServiceWrites(t, ns, "web", changed); len(writes) == 0 {
		t.Error("the audit log has no write of the Service for the new port")
	}

	// Converged: a sync writes nothing.
	start := time.Now()
	mustKubectl(t, "annotate", "robot/web", "e2e.robot.dev/poke=1", "-n", ns)
	time.Sleep(5 * time.Second)
	checkNoServiceWrites(t, ns, "web", start)
}

// TestServiceNodePort: a nodePort the Robot sets is its Service's; cleared,
// the API server keeps one of its own, which the operator leaves alone; one
// the API server refuses (out of the cluster's node port range) is
// reported with the Robot's field.
func TestServiceNodePort(t *testing.T) {
	parallel(t)
	requireAuditLog(t)
	ns := newNamespace(t)
	robot := newRobot(ns, "edge", 1)
	robot.Spec.Service = &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNodePort}
	robot.Spec.Ports = []robotv1beta1.RobotPort{{Name: portName, ContainerPort: 8080, ServicePort: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}
	createRobot(t, robot)
	s := waitForService(t, ns, "edge", "has node port 30080", func(s *corev1.Service) bool {
		return s.Spec.Type == corev1.ServiceTypeNodePort && len(s.Spec.Ports) == 1 && s.Spec.Ports[0].NodePort == 30080
	})
	if p := s.Spec.Ports[0]; p.Port != 80 || p.TargetPort != intstr.FromString(portName) {
		t.Errorf("Service port %+v, want 80 to %s", p, portName)
	}
	waitForRobot(t, ns, "edge", convergeTimeout, "is settled", robotSettled)

	// Cleared: the Service keeps a node port, the API server's, and the
	// operator does not fight over it.
	patchRobot(t, ns, "edge", `{"spec":{"ports":[{"name":"http","containerPort":8080,"servicePort":80}]}}`)
	waitForRobot(t, ns, "edge", convergeTimeout, "is settled without a nodePort", robotSettled)
	s = waitForService(t, ns, "edge", "has a node port", func(s *corev1.Service) bool { return len(s.Spec.Ports) == 1 && s.Spec.Ports[0].NodePort != 0 })
	t.Logf("node port %d once the Robot sets none", s.Spec.Ports[0].NodePort)
	start := time.Now()
	mustKubectl(t, "annotate", "robot/edge", "e2e.robot.dev/poke=1", "-n", ns)
	time.Sleep(5 * time.Second)
	checkNoServiceWrites(t, ns, "edge", start)

	// Out of the cluster's range, which only the API server knows.
	patchRobot(t, ns, "edge", `{"spec":{"ports":[{"name":"http","containerPort":8080,"servicePort":80,"nodePort":40000}]}}`)
	refused := waitForRobot(t, ns, "edge", convergeTimeout, "says the node port is refused", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return synced != nil && synced.Status == metav1.ConditionFalse && synced.Reason == robotv1beta1.ReasonInvalidSpec &&
			synced.ObservedGeneration == r.Generation
	})
	synced := meta.FindStatusCondition(refused.Status.Conditions, robotv1beta1.ConditionSynced)
	if !strings.Contains(synced.Message, "spec.ports[0].nodePort 40000") || !strings.Contains(synced.Message, "range") {
		t.Errorf("Synced says %q, want it to name spec.ports[0].nodePort 40000 and the range", synced.Message)
	}
	// Back in the range: synced again.
	patchRobot(t, ns, "edge", `{"spec":{"ports":[{"name":"http","containerPort":8080,"servicePort":80,"nodePort":30081}]}}`)
	waitForService(t, ns, "edge", "has node port 30081", func(s *corev1.Service) bool { return len(s.Spec.Ports) == 1 && s.Spec.Ports[0].NodePort == 30081 })
	waitForRobot(t, ns, "edge", convergeTimeout, "is settled", robotSettled)
}

// TestUpgradeKeepsServicesWithoutServicePort: a Robot without servicePort
// nor nodePort, whose Service the operator of before those fields made,
// keeps it untouched when this tree's operator takes over: no write.
func TestUpgradeKeepsServicesWithoutServicePort(t *testing.T) {
	exclusive(t, "stops the shared operator and runs the operator of an earlier commit")
	requireAuditLog(t)
	_, oldBin := buildRelease(t, beforeServicePorts)
	pauseSharedOperator(t)
	args, err := operatorArgs(oldBin, env.operator.args[1])
	if err != nil {
		t.Fatal(err)
	}
	// It serves the conversion at the shared operator's address, as a
	// release taking over does, and leaves no default port to collide on.
	previous := extraOperator(t, "before-service-ports", append(args, webhookFlags()...))
	previous.bin = oldBin
	if err := previous.start(); err != nil {
		t.Fatalf("starting the earlier operator: %v", err)
	}

	ns := newNamespace(t)
	web := newRobot(ns, "web", 1)
	web.Spec.Ports = []robotv1beta1.RobotPort{
		{Name: portName, ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
	}
	edge := newRobot(ns, "edge", 1)
	edge.Spec.Ports = httpPorts(8080)
	edge.Spec.Service = &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNodePort}
	before := map[string]*corev1.Service{}
	for _, robot := range []*robotv1beta1.Robot{web, edge} {
		createRobot(t, robot)
		waitForRobot(t, ns, robot.Name, upgradeTimeout, "is settled under the earlier operator", robotSettled)
		before[robot.Name] = waitForService(t, ns, robot.Name, "exists", func(*corev1.Service) bool { return true })
	}
	if err := previous.stop(); err != nil {
		t.Fatalf("stopping the earlier operator: %v", err)
	}

	upgraded := time.Now()
	if err := env.operator.start(); err != nil {
		t.Fatalf("starting this tree's operator: %v", err)
	}
	// A Robot created now gets its Service once this tree's operator has
	// worked through the Robots it found at its start, these two among
	// them.
	witness := newRobot(ns, "witness", 1)
	witness.Spec.Ports = httpPorts(8080)
	createRobot(t, witness)
	waitForService(t, ns, "witness", "is made by this tree's operator", func(*corev1.Service) bool { return true })
	mustKubectl(t, "annotate", "robots", "--all", "e2e.robot.dev/poke=1", "-n", ns)
	time.Sleep(5 * time.Second)
	for name, was := range before {
		checkNoServiceWrites(t, ns, name, upgraded)
		s := waitForService(t, ns, name, "exists", func(*corev1.Service) bool { return true })
		if s.ResourceVersion != was.ResourceVersion {
			t.Errorf("Service %s changed with the upgrade: resourceVersion %s, before %s", name, s.ResourceVersion, was.ResourceVersion)
		}
	}
}
