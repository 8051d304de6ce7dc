package drift

import (
	"maps"
	"slices"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// FuzzServiceDrift: the Service built from any spec.service the Robot's
// validation admits (annotations, labels, traffic fields of every type),
// once the API server has defaulted and stored it, and whatever a cloud
// controller adds next to the Robot's keys, shows no drift and no class
// change; an edit of any key the Robot sets is drift, and so is a key the
// Robot stops setting, so that the apply that follows removes it.
func FuzzServiceDrift(f *testing.F) {
	// Each seed in the order the target reads: the type; the annotations'
	// count, then for each how its key is chosen (0: the fuzzer's own
	// string), the key and the value; the labels the same way; the two
	// policies; the source ranges' count and each; a class or not, and which.
	for _, seed := range [][]byte{
		nil,
		// LoadBalancer, every field.
		robottest.EncodeFuzzInput(byte(2), byte(2), byte(1), byte(0), "internal", byte(1), byte(1), "x",
			byte(1), byte(1), byte(0), "edge", byte(2), byte(1), byte(2), byte(1), byte(0), byte(1), byte(2), byte(1), byte(1), byte(0)),
		// NodePort, an annotation key of the fuzzer's own.
		robottest.EncodeFuzzInput(byte(1), byte(1), byte(0), "Example.com/Raw", "v", byte(1), byte(1), byte(1), "a.b-c_d",
			byte(1), byte(2), byte(0), byte(0)),
		// Refused: externalTrafficPolicy on a ClusterIP Service.
		robottest.EncodeFuzzInput(byte(0), byte(0), byte(0), byte(2)),
	} {
		f.Add(seed)
	}
	annotationKeys := []string{"service.beta.kubernetes.io/aws-load-balancer-scheme", "example.com/note", "Example.COM/Owner", "note"}
	labelKeys := []string{"team", "example.com/tier", "mesh"}
	ranges := []string{"10.0.0.0/8", "192.168.1.0/24", "2001:db8::/32", "0.0.0.0/0"}
	policies := []string{"", "Cluster", "Local"}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := &robottest.FuzzBytes{Data: data}
		key := func(known []string) string {
			// Mostly known keys, sometimes the fuzzer's own, which the
			// validation may refuse.
			if b.Byte()%4 == 0 {
				return b.String()
			}
			return robottest.Pick(b, known)
		}
		service := &robotv1beta1.RobotService{Type: robottest.Pick(b, []robotv1beta1.ServiceType{
			robotv1beta1.ServiceTypeClusterIP, robotv1beta1.ServiceTypeNodePort, robotv1beta1.ServiceTypeLoadBalancer, ""})}
		for range b.Byte() % 4 {
			if service.Annotations == nil {
				service.Annotations = map[string]string{}
			}
			service.Annotations[key(annotationKeys)] = b.String()
		}
		for range b.Byte() % 4 {
			if service.Labels == nil {
				service.Labels = map[string]string{}
			}
			service.Labels[key(labelKeys)] = b.String()
		}
		service.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(robottest.Pick(b, policies))
		service.InternalTrafficPolicy = corev1.ServiceInternalTrafficPolicy(robottest.Pick(b, policies))
		for range b.Byte() % 3 {
			service.LoadBalancerSourceRanges = append(service.LoadBalancerSourceRanges, key(ranges))
		}
		if b.Byte()%2 == 1 {
			service.LoadBalancerClass = key([]string{"example.com/internal-lb", "lb"})
		}
		if robotv1beta1.ValidateService(service) != nil {
			return // the CRD or the operator refuses it: it never becomes a Service
		}
		robot := robottest.NewRobot("web", 1)
		robot.Spec.Service = service
		robot = robottest.DecodedAgain(t, robot)
		desired := workload.NewService(robot)

		live := robottest.LiveServiceOf(t, desired)
		// A cloud controller's keys, never the Robot's.
		live.Annotations["cloud.example.com/load-balancer-id"] = "lb-123"
		live.Labels["cloud.example.com/zone"] = "a"
		if got := ServiceDrift(desired, live); got != "" {
			t.Fatalf("drift %q right after the apply of %s", got, robottest.MustString(desired))
		}
		for _, refusedBefore := range []bool{false, true} {
			if err := LoadBalancerClassChange(desired, live, refusedBefore); err != nil {
				t.Fatalf("a class change right after the apply (refused before: %v): %v", refusedBefore, err)
			}
		}

		for _, k := range slices.Sorted(maps.Keys(service.Annotations)) {
			edited := live.DeepCopy()
			edited.Annotations[k] += "-edited"
			if ServiceDrift(desired, edited) == "" {
				t.Errorf("annotation %q edited: no drift", k)
			}
			fewer := robot.DeepCopy()
			delete(fewer.Spec.Service.Annotations, k)
			if ServiceDrift(workload.NewService(fewer), live) == "" {
				t.Errorf("annotation %q removed from the Robot: no drift", k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(service.Labels)) {
			edited := live.DeepCopy()
			edited.Labels[k] += "x"
			if ServiceDrift(desired, edited) == "" {
				t.Errorf("label %q edited: no drift", k)
			}
		}
		if service.InternalTrafficPolicy != "" {
			edited := live.DeepCopy()
			edited.Spec.InternalTrafficPolicy = ptr.To(map[corev1.ServiceInternalTrafficPolicy]corev1.ServiceInternalTrafficPolicy{
				"Cluster": "Local", "Local": "Cluster"}[service.InternalTrafficPolicy])
			if ServiceDrift(desired, edited) == "" {
				t.Error("internalTrafficPolicy flipped: no drift")
			}
		}
		if len(service.LoadBalancerSourceRanges) > 0 {
			edited := live.DeepCopy()
			edited.Spec.LoadBalancerSourceRanges = edited.Spec.LoadBalancerSourceRanges[1:]
			if ServiceDrift(desired, edited) == "" {
				t.Error("a source range removed: no drift")
			}
		}
	})
}
