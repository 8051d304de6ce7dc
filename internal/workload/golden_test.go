package workload

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// update rewrites the golden files instead of comparing with them:
//
//	go test -run Golden ./internal/workload -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden with what the tests produce")

// TestGoldenApplyBodies compares the bodies the operator sends with
// server-side apply, the Deployment, the Service and the Robot's status,
// byte for byte with files under testdata/golden: for GoldenRobot, and for
// RolloutRobot, which sets several ports, a strategy and minReadySeconds,
// for a restricted Robot with a sidecar, an init container, a grace period
// and a preStop sleep, and for LoadBalancerRobot's Service, which sets every
// field of spec.service. Any change to what is
// sent, meant or not, then shows in review as a change to those files.
//
// The status golden changes whenever the conditions do (a condition added,
// a reason or message reworded), and that is the point: the reviewer sees
// what every Robot's status will say. Rewrite the files with -update and
// read their diff.
func TestGoldenApplyBodies(t *testing.T) {
	robot := robottest.GoldenRobot()
	desired, err := NewDeployment(robot)
	if err != nil {
		t.Fatalf("newDeployment: %v", err)
	}
	rollout := robottest.RolloutRobot()
	desiredRollout, err := NewDeployment(rollout)
	if err != nil {
		t.Fatalf("newDeployment: %v", err)
	}
	containers := robottest.NewRobot("web", 2)
	withContainers(containers)
	containers.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
	containers.Spec.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: 10}}
	containers.Spec.SecurityProfile = robotv1beta1.SecurityProfileRestricted
	desiredContainers, err := NewDeployment(containers)
	if err != nil {
		t.Fatalf("newDeployment: %v", err)
	}
	// A port on the Service at another number than the container's, on
	// a node port the Robot sets; the other at its own number, on the
	// node port the API server picks.
	servicePorts := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeNodePort)
	servicePorts.Spec.Ports = []robotv1beta1.RobotPort{
		{Name: "http", ContainerPort: 8080, ServicePort: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
	}
	for file, body := range map[string]any{
		"deployment.json":            desired,
		"service.json":               NewService(robot),
		"deployment-rollout.json":    desiredRollout,
		"service-rollout.json":       NewService(rollout),
		"deployment-containers.json": desiredContainers,
		"service-loadbalancer.json":  NewService(robottest.LoadBalancerRobot()),
		"service-ports.json":         NewService(servicePorts),
	} {
		t.Run(file, func(t *testing.T) {
			got, err := json.MarshalIndent(body, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", file)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", path)
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (to write it: go test -run Golden ./internal/workload -update)", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("the apply body differs from %s (-file +now); if the change is meant, rewrite it with `go test -run Golden ./internal/workload -update` and commit it:\n%s",
					path, robottest.LineDiff(string(want), string(got)))
			}
		})
	}
}
