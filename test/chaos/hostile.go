package main

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

// hostileBigReplicas is the replicas of scenario 9's one Robot at the
// schema's maximum.
const hostileBigReplicas = 1000

// hostilePods is how many pods scenario 9's n Robots can ask for at most:
// up to 3 each, and the one at the maximum.
func hostilePods(n int) int { return 3*n + hostileBigReplicas }

// oddStrings are legal values that a careless encoder, template or
// comparison gets wrong.
var oddStrings = []string{
	"", " ", "\t", "line one\nline two", `"quoted"`, `back\slash`, "$(NOT_A_VAR)", "$$(ESCAPED)", "${HOME}",
	"ロボット", "émoji 🤖", "\u200bzero width", "--flag=value", "-", "{}", "[]", "null", "true", "0", "-1", "1e3",
	"'single'", "a=b=c", "#comment", "% s %d", "<script>", "NaN",
}

// hostileRobot is Robot i of scenario 9: a random shape at the edges of what
// the CRD admits (the longest name, 256 args and env vars, odd strings,
// extreme ports, tiny resources), every one of which can run on the local
// cluster's fake nodes, and so must end Ready. Robot 0 asks for the
// maximum replicas.
func hostileRobot(rng *rand.Rand, i int) *robotv1beta1.Robot {
	name := robotName(i)
	if rng.Intn(4) == 0 {
		// The longest name the CRD admits (63: a label value).
		name += "-" + strings.Repeat("x", 63-len(name)-2) + "z"
	}
	robot := &robotv1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       robotv1beta1.RobotSpec{Image: "registry.example/robot:1.0", Replicas: ptr.To(int32(1 + rng.Intn(3)))},
	}
	if i == 0 {
		robot.Spec.Replicas = ptr.To(int32(hostileBigReplicas))
	}
	spec := &robot.Spec
	switch rng.Intn(4) {
	case 0:
		// The longest image reference the CRD admits.
		prefix := "registry.example/"
		spec.Image = prefix + strings.Repeat("a", 512-len(prefix)-len(":1")) + ":1"
	case 1:
		spec.Image = "registry.example:5000/team/robot@sha256:" + strings.Repeat("0", 64)
	}
	count := func() int {
		switch rng.Intn(3) {
		case 0:
			return 0
		case 1:
			return 256 // the maximum
		}
		return 1 + rng.Intn(16)
	}
	odd := func() string {
		if rng.Intn(8) == 0 {
			return strings.Repeat("ü", 1+rng.Intn(512))
		}
		return oddStrings[rng.Intn(len(oddStrings))]
	}
	for range count() {
		spec.Args = append(spec.Args, odd())
	}
	if rng.Intn(4) == 0 {
		spec.Command = []string{"/bin/robot", odd()}
	}
	for j := range count() {
		spec.Env = append(spec.Env, corev1.EnvVar{Name: fmt.Sprintf("VAR_%d_%s", j, strings.Repeat("X", rng.Intn(32))), Value: odd()})
	}
	if i%20 == 1 {
		// Few enough Services for the cluster's ClusterIP range.
		spec.Ports = []robotv1beta1.RobotPort{{Name: "http", ContainerPort: []int32{1, 80, 8080, 65535}[rng.Intn(4)], Protocol: corev1.ProtocolTCP}}
	}
	if rng.Intn(2) == 0 {
		spec.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("1Ki")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse([]string{"1Ki", "64Mi", "1536Mi"}[rng.Intn(3)])},
		}
	}
	spec.ImagePullPolicy = []corev1.PullPolicy{"", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}[rng.Intn(4)]
	return robot
}

// hostileRobots (scenario 9) creates n Robots of random shapes at the edges
// of what the CRD admits, with the operator running. The fault is the input
// itself: the operator must neither crash nor loop on any of it, and every
// Robot must end Ready.
func hostileRobots(ctx context.Context, s *scenarioRun) error {
	if err := s.startOperator(ctx); err != nil {
		return err
	}
	s.faultStart = time.Now()
	var mu sync.Mutex
	var rejected []string
	shapes := map[string]int{}
	err := task.Parallel(ctx, s.want, 16, func(ctx context.Context, i int) error {
		robot := hostileRobot(rand.New(rand.NewSource(s.env.cfg.seed+int64(i))), i)
		_, err := s.c.Robots.RobotV1beta1().Robots(namespace).Create(ctx, robot, metav1.CreateOptions{})
		mu.Lock()
		defer mu.Unlock()
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			rejected = append(rejected, fmt.Sprintf("%s: %v", robot.Name, err))
			return nil
		}
		if err != nil {
			return err
		}
		for shape, ok := range map[string]bool{
			"63-character name": len(robot.Name) == 63, "512-character image": len(robot.Spec.Image) == 512,
			"256 args": len(robot.Spec.Args) == 256, "256 env vars": len(robot.Spec.Env) == 256,
			"a port": len(robot.Spec.Ports) > 0, fmt.Sprintf("%d replicas", hostileBigReplicas): *robot.Spec.Replicas == hostileBigReplicas,
		} {
			if ok {
				shapes[shape]++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.faultEnd = time.Now()
	s.want -= len(rejected)
	sort.Strings(rejected)
	s.checks = append(s.checks, checkf("admitted", len(rejected) == 0, "%d of %d random Robots admitted; refused: %v", s.want, s.want+len(rejected), rejected[:min(len(rejected), 3)]))
	var kinds []string
	for shape, n := range shapes {
		kinds = append(kinds, fmt.Sprintf("%s: %d", shape, n))
	}
	sort.Strings(kinds)
	s.notes = append(s.notes, fmt.Sprintf("%d Robots created in %.0f s; %s", s.want, s.faultEnd.Sub(s.faultStart).Seconds(), strings.Join(kinds, ", ")))
	// Nothing restarts the operator in this scenario: the "operator ran"
	// check fails if it exited, crashed by some Robot.
	s.mustRunThrough = true
	return nil
}
