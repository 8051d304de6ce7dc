//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// webhookTimeout is how long the tests give the operator to answer
// conversions after it starts: the leader makes the certificates and writes
// the caBundle at once.
const webhookTimeout = 30 * time.Second

// waitForConversion waits until the API server converts Robots of ns, that
// is until the operator's webhook answers with a certificate the CRD trusts.
func waitForConversion(t *testing.T, ns string) {
	t.Helper()
	eventually(t, webhookTimeout, "the API server lists Robots as v1alpha1 through the webhook", func(ctx context.Context) (bool, string, error) {
		_, err := env.robots.RobotV1alpha1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}

// TestRobotWrittenAsV1alpha1 is a client of the old version: the Robot it
// writes is stored as v1beta1, runs, and reads back the same in v1alpha1.
func TestRobotWrittenAsV1alpha1(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := t.Context()
	waitForConversion(t, ns)
	old := &robotv1alpha1.Robot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: robotv1alpha1.RobotSpec{
			Image:       image1,
			Replicas:    ptr.To[int32](1),
			Port:        ptr.To[int32](8080),
			Args:        []string{"netexec", "--http-port=8080"},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		},
	}
	if _, err := env.robots.RobotV1alpha1().Robots(ns).Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Robot as v1alpha1: %v", err)
	}
	robot, err := env.robots.RobotV1beta1().Robots(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []robotv1beta1.RobotPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	if fmt.Sprint(robot.Spec.Ports) != fmt.Sprint(want) || len(robot.Spec.Placement.Tolerations) != 1 {
		t.Errorf("read as v1beta1: ports %+v, placement %+v; want %+v and the toleration", robot.Spec.Ports, robot.Spec.Placement, want)
	}
	waitForRobotReady(t, ns, "web")
	d := getDeployment(t, ns, "web")
	if ports := d.Spec.Template.Spec.Containers[0].Ports; len(ports) != 1 || ports[0].Name != "http" || ports[0].ContainerPort != 8080 {
		t.Errorf("the Deployment's container ports are %+v, want http: 8080", ports)
	}
	back, err := env.robots.RobotV1alpha1().Robots(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(back.Spec.Port, 0) != 8080 || len(back.Spec.Tolerations) != 1 || back.Annotations[robotv1alpha1.ConversionDataAnnotation] != "" {
		t.Errorf("read back as v1alpha1: port %v, tolerations %+v, annotations %v", back.Spec.Port, back.Spec.Tolerations, back.Annotations)
	}
	if back.Status.ObservedGeneration != back.Generation || len(back.Status.Conditions) == 0 {
		t.Errorf("read back as v1alpha1, the status is not there: %+v", back.Status)
	}
}

// TestTwoPortsSurviveAnEditThroughV1alpha1: a Robot written as v1beta1 with
// what v1alpha1 has no field for (a second port, a strategy, the Service's
// metadata and traffic fields), replaced whole through v1alpha1 (kubectl get
// -o yaml | edit | kubectl replace, or an older client), keeps it all.
func TestTwoPortsSurviveAnEditThroughV1alpha1(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := t.Context()
	waitForConversion(t, ns)
	robot := &robotv1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: robotv1beta1.RobotSpec{
			Image:    image1,
			Replicas: ptr.To[int32](1),
			Args:     []string{"netexec", "--http-port=8080"},
			Ports: []robotv1beta1.RobotPort{
				{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
				{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
			},
			Strategy: &robotv1beta1.RobotStrategy{
				Type:          robotv1beta1.StrategyRollingUpdate,
				RollingUpdate: &robotv1beta1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))},
			},
			MinReadySeconds: 2,
			Service: &robotv1beta1.RobotService{
				Type:                     robotv1beta1.ServiceTypeLoadBalancer,
				Annotations:              map[string]string{"example.com/scheme": "internal"},
				Labels:                   map[string]string{"team": "blue"},
				ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
				InternalTrafficPolicy:    corev1.ServiceInternalTrafficPolicyLocal,
				LoadBalancerSourceRanges: []string{"10.0.0.0/8"},
				LoadBalancerClass:        "example.com/lb",
			},
		},
	}
	if _, err := env.robots.RobotV1beta1().Robots(ns).Create(ctx, robot, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a two-port Robot as v1beta1: %v", err)
	}
	old, err := env.robots.RobotV1alpha1().Robots(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it as v1alpha1: %v", err)
	}
	if ptr.Deref(old.Spec.Port, 0) != 8080 || !strings.Contains(old.Annotations[robotv1alpha1.ConversionDataAnnotation], "metrics") {
		t.Fatalf("as v1alpha1: port %v, annotations %v; want 8080 and the rest in %s", old.Spec.Port, old.Annotations, robotv1alpha1.ConversionDataAnnotation)
	}
	// The operator writes the status meanwhile: read again and retry on a
	// conflict, as kubectl edit asks its user to.
	for attempt := 0; ; attempt++ {
		old.Spec.Replicas = ptr.To[int32](2)
		_, err := env.robots.RobotV1alpha1().Robots(ns).Update(ctx, old, metav1.UpdateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsConflict(err) || attempt == 5 {
			t.Fatalf("replacing it through v1alpha1: %v", err)
		}
		if old, err = env.robots.RobotV1alpha1().Robots(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := env.robots.RobotV1beta1().Robots(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Ports) != 2 || got.Spec.Ports[1].Name != "metrics" || got.Spec.Strategy == nil || got.Spec.Strategy.RollingUpdate == nil ||
		got.Spec.MinReadySeconds != 2 || ptr.Deref(got.Spec.Replicas, 0) != 2 {
		t.Errorf("after the replace through v1alpha1, as v1beta1: ports %+v, strategy %+v, minReadySeconds %d, replicas %v; want both ports, the strategy, 2 and 2",
			got.Spec.Ports, got.Spec.Strategy, got.Spec.MinReadySeconds, got.Spec.Replicas)
	}
	if !apiequality.Semantic.DeepEqual(got.Spec.Service, robot.Spec.Service) {
		t.Errorf("after the replace through v1alpha1, the Service's fields are %+v, want %+v", got.Spec.Service, robot.Spec.Service)
	}
	if _, ok := got.Annotations[robotv1alpha1.ConversionDataAnnotation]; ok {
		t.Errorf("the stored Robot carries %s: %v", robotv1alpha1.ConversionDataAnnotation, got.Annotations)
	}
	waitForRobotReady(t, ns, "web")
	d := getDeployment(t, ns, "web")
	if ports := d.Spec.Template.Spec.Containers[0].Ports; len(ports) != 2 {
		t.Errorf("the Deployment's container ports are %+v, want http and metrics", ports)
	}
	if d.Spec.MinReadySeconds != 2 || d.Spec.Strategy.RollingUpdate == nil || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("the Deployment's minReadySeconds %d, strategy %+v; want 2 and maxUnavailable 0", d.Spec.MinReadySeconds, d.Spec.Strategy)
	}
	service, err := env.kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(service.Spec.Ports) != 2 || service.Annotations["example.com/scheme"] != "internal" || ptr.Deref(service.Spec.LoadBalancerClass, "") != "example.com/lb" {
		t.Errorf("the Service's ports are %+v, annotations %v, class %v; want http and metrics, the Robot's annotation and class",
			service.Spec.Ports, service.Annotations, service.Spec.LoadBalancerClass)
	}
}

// TestBrokenConversionDataIsIgnored: a v1alpha1 write whose conversion
// data cannot be read is not refused (the webhook cannot tell a write from a
// read, and refusing would make the Robot unreadable): the annotation
// restores nothing and is dropped, and the Robot keeps what v1alpha1 says.
func TestBrokenConversionDataIsIgnored(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := t.Context()
	waitForConversion(t, ns)
	robot := &robotv1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: robotv1beta1.RobotSpec{
			Image:           image1,
			Ports:           []robotv1beta1.RobotPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
			MinReadySeconds: 5,
		},
	}
	if _, err := env.robots.RobotV1beta1().Robots(ns).Create(ctx, robot, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The operator writes the status meanwhile: a conflict is not the
	// answer looked for, so read again and retry.
	var err error
	for range 5 {
		var old *robotv1alpha1.Robot
		if old, err = env.robots.RobotV1alpha1().Robots(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		old.Annotations[robotv1alpha1.ConversionDataAnnotation] = "{oops"
		if _, err = env.robots.RobotV1alpha1().Robots(ns).Update(ctx, old, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			break
		}
	}
	if err != nil {
		t.Fatalf("an update through v1alpha1 with broken conversion data: %v, want it accepted", err)
	}
	stored, err := env.robots.RobotV1beta1().Robots(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Spec.Ports) != 1 || stored.Spec.Ports[0].ContainerPort != 8080 || stored.Spec.MinReadySeconds != 0 || stored.Annotations[robotv1alpha1.ConversionDataAnnotation] != "" {
		t.Errorf("stored: ports %+v, minReadySeconds %d, annotations %v; want the one port v1alpha1 showed, and nothing from the annotation", stored.Spec.Ports, stored.Spec.MinReadySeconds, stored.Annotations)
	}
}
