package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// update rewrites the golden files instead of comparing with them:
//
//	go test -run Golden . -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden with what the tests produce")

// TestGoldenApplyBodies compares the bodies the operator sends with
// server-side apply, the Deployment, the Service and the Robot's status,
// byte for byte with files under testdata/golden. Any change to what is
// sent, meant or not, then shows in review as a change to those files.
//
// The status golden changes whenever the conditions do (a condition added,
// a reason or message reworded), and that is the point: the reviewer sees
// what every Robot's status will say. Rewrite the files with -update and
// read their diff.
func TestGoldenApplyBodies(t *testing.T) {
	robot := goldenRobot()
	desired, err := newDeployment(robot)
	if err != nil {
		t.Fatalf("newDeployment: %v", err)
	}
	status := computeStatus(robot, goldenDeployment(robot), nil, nil, metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)))

	for file, body := range map[string]any{
		"deployment.json": desired,
		"service.json":    newService(robot),
		"status.json":     statusApplyConfiguration(robot, &status),
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
				t.Fatalf("%v (to write it: go test -run Golden . -update)", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("the apply body differs from %s (-file +now); if the change is meant, rewrite it with `go test -run Golden . -update` and commit it:\n%s",
					path, lineDiff(string(want), string(got)))
			}
		})
	}
}

// goldenRobot is a Robot that sets every field of its spec, each in a way
// that shows in the Deployment.
func goldenRobot() *robotv1alpha1.Robot {
	return &robotv1alpha1.Robot{
		TypeMeta: metav1.TypeMeta{APIVersion: robotv1alpha1.SchemeGroupVersion.String(), Kind: "Robot"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            "golden",
			Namespace:       "robots",
			UID:             "5b0c4d52-8f1e-4e7a-9c1d-0a2b3c4d5e6f",
			Generation:      3,
			ResourceVersion: "4711",
		},
		Spec: robotv1alpha1.RobotSpec{
			Image:          "registry.example/team/robot:1.4.2",
			Replicas:       ptr.To[int32](3),
			DeploymentName: "golden-runner",
			Port:           ptr.To[int32](8080),
			Service:        &robotv1alpha1.RobotService{Type: robotv1alpha1.ServiceTypeNodePort},
			Args:           []string{"serve", "--verbose"},
			Env: []corev1.EnvVar{
				{Name: "MODE", Value: "demo"},
				// No apiVersion: the operator fills in the API server's
				// default, v1.
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "robot-secrets"},
					Key:                  "token",
					Optional:             ptr.To(false),
				}}},
			},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
		},
	}
}

// goldenDeployment is robot's Deployment with every replica updated and
// available, as the Deployment controller reports it.
func goldenDeployment(robot *robotv1alpha1.Robot) *appsv1.Deployment {
	replicas := *robot.Spec.Replicas
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: deploymentName(robot), Namespace: robot.Namespace, Generation: 2},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 2,
			Replicas:           replicas,
			UpdatedReplicas:    replicas,
			ReadyReplicas:      replicas,
			AvailableReplicas:  replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "golden-runner-6d4b9c8f7" has successfully progressed.`},
			},
		},
	}
}

// lineDiff shows how got differs from want, line by line: "-" for a line
// only want has, "+" for one only got has, with up to three unchanged lines
// around each change.
func lineDiff(want, got string) string {
	split := func(s string) []string {
		// Lines keep their newline, so that a missing last one shows.
		lines := strings.SplitAfter(s, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		return lines
	}
	a, b := split(want), split(got)
	// common[i][j]: the length of the longest common subsequence of a[i:]
	// and b[j:]. Golden files are small.
	common := make([][]int, len(a)+1)
	for i := range common {
		common[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				common[i][j] = common[i+1][j+1] + 1
			} else {
				common[i][j] = max(common[i+1][j], common[i][j+1])
			}
		}
	}
	type line struct {
		mark byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			lines = append(lines, line{' ', a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || common[i+1][j] >= common[i][j+1]):
			lines = append(lines, line{'-', a[i]})
			i++
		default:
			lines = append(lines, line{'+', b[j]})
			j++
		}
	}
	const context = 3
	var out strings.Builder
	lastShown := -1
	for k, l := range lines {
		near := false
		for d := max(0, k-context); d <= min(len(lines)-1, k+context); d++ {
			if lines[d].mark != ' ' {
				near = true
				break
			}
		}
		if !near {
			continue
		}
		if lastShown >= 0 && k > lastShown+1 {
			out.WriteString("   ...\n")
		}
		text, newline := strings.CutSuffix(l.text, "\n")
		if !newline {
			text += " (no newline at the end)"
		}
		fmt.Fprintf(&out, "%c %s\n", l.mark, text)
		lastShown = k
	}
	return out.String()
}
