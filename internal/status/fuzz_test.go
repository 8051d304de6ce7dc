package status

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// FuzzComputeStatus: whatever the Deployment reports and however the sync
// failed, the status has each of the operator's conditions once, with a
// reason and a message the CRD accepts; Ready is True only for a Deployment
// that runs the Robot's spec with every desired replica updated and
// available; Compute is deterministic and leaves its inputs alone; and
// the status, once written and read back, is what the next sync computes,
// so that sync writes nothing.
func FuzzComputeStatus(f *testing.F) {
	deploymentConditions := robottest.EncodeFuzzInput(
		byte(0), byte(0), "MinimumReplicasAvailable", byte(1), "Deployment has minimum availability.", byte(1),
		byte(1), byte(0), "NewReplicaSetAvailable", byte(1), "ReplicaSet has successfully progressed.", byte(1))
	deadline := robottest.EncodeFuzzInput(
		byte(0), byte(1), "MinimumReplicasUnavailable", byte(1), "Deployment does not have minimum availability.", byte(1),
		byte(1), byte(1), "ProgressDeadlineExceeded", byte(1), `ReplicaSet "test-5d4f" has timed out progressing.`, byte(1))
	// What apps/v1 does not validate: any status, any reason.
	odd := robottest.EncodeFuzzInput(
		byte(0), byte(4), "Maybe", "not a reason", byte(1), "\u00e9\u00e8", byte(200),
		byte(3), "Custom", byte(2), "Reason:With,Punctuation_", byte(1), strings.Repeat("m", 255), byte(9),
		byte(1), byte(0), "Ready", byte(255), strings.Repeat("m", 100), byte(20))
	// A 422 that quotes what it refuses, at length.
	invalidEnvNames := strings.Repeat(`spec.template.spec.containers[0].env[0].name: Invalid value: "größe": `+
		`a valid environment variable name must consist only of printable ASCII characters other than '='; `, 8)
	previous := robottest.EncodeFuzzInput(byte(0), byte(0), byte(1), byte(1), byte(4), byte(0), byte(3), byte(2))
	for i, seed := range []struct {
		robotGeneration                     int64
		specReplicas                        int32
		hasDeployment                       bool
		generation, observedGeneration      int64
		deploymentReplicas                  int32
		hasDeploymentReplicas               bool
		replicas, updated, ready, available int32
		conditions, previous                []byte
		errKind                             uint8
		errMessage                          string
		specApplied                         bool
	}{
		{1, 2, true, 1, 1, 2, true, 2, 2, 2, 2, deploymentConditions, nil, 0, "", true},
		{3, 2, true, 2, 2, 2, true, 2, 2, 2, 2, deploymentConditions, previous, 0, "", true},
		{1, 2, true, 2, 1, 2, true, 2, 2, 2, 2, deploymentConditions, nil, 0, "", true},
		{1, 3, true, 1, 1, 3, true, 3, 1, 1, 1, deadline, previous, 0, "", true},
		{1, 2, true, 1, 1, 2, true, 3, 2, 2, 2, deploymentConditions, nil, 1, "the server is currently unable to handle the request", true},
		{1, 2, true, 1, 1, 2, true, 2, 2, 2, 2, deploymentConditions, nil, 1, "the server is currently unable to handle the request", false},
		{1, 1, false, 0, 0, 0, false, 0, 0, 0, 0, nil, nil, 2, "spec.port must be between 1 and 65535, not 0", false},
		{1, 1, false, 0, 0, 0, false, 0, 0, 0, 0, nil, previous, 3, "test", false},
		{1, 1, true, 1, 1, 1, true, 1, 1, 1, 1, odd, previous, 2, invalidEnvNames, false},
		// A message that a cut at a fixed byte splits inside a character.
		{1, 1, false, 0, 0, 0, false, 0, 0, 0, 0, nil, nil, 4, strings.Repeat("\u00fc", 600), false},
		{5, 0, true, 4, 4, 0, true, 0, 0, 0, 0, odd, nil, 5, "test", true},
		{1, 1, true, 1, 1, 1, false, 1, 1, 1, 1, deploymentConditions, nil, 6, "", true},
		{1, 1000, true, 7, 7, 1000, true, 1000, 1000, 999, 999, deploymentConditions, nil, 7, "x", false},
	} {
		f.Add(seed.robotGeneration, seed.specReplicas, seed.hasDeployment, seed.generation, seed.observedGeneration,
			seed.deploymentReplicas, seed.hasDeploymentReplicas, seed.replicas, seed.updated, seed.ready, seed.available,
			seed.conditions, seed.previous, seed.errKind, seed.errMessage, seed.specApplied, int64(i)*int64(time.Second+1234))
	}
	f.Fuzz(func(t *testing.T, robotGeneration int64, specReplicas int32, hasDeployment bool, generation, observedGeneration int64,
		deploymentReplicas int32, hasDeploymentReplicas bool, replicas, updated, ready, available int32,
		conditions, previous []byte, errKind uint8, errMessage string, specApplied bool, nanos int64) {
		// What the API server stores: generations from 1, counts and
		// the Robot's replicas within their validation.
		switch {
		case robotGeneration < 1 || specReplicas < 0 || specReplicas > 1000:
			t.Skip("the CRD or the API server refuses this Robot")
		case hasDeployment && (generation < 1 || observedGeneration < 0 || deploymentReplicas < 0 ||
			replicas < 0 || updated < 0 || ready < 0 || available < 0):
			t.Skip("the API server refuses this Deployment")
		}
		robot := robottest.NewRobot("test", specReplicas)
		robot.Generation = robotGeneration
		robot.Status.Conditions = robottest.PreviousConditions(previous)
		// As the informer decodes it.
		robot = robottest.DecodedAgain(t, robot)

		var deployment *appsv1.Deployment
		if hasDeployment {
			desired, err := workload.NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			deployment = &appsv1.Deployment{}
			if err := workload.RoundTrip(desired, deployment); err != nil {
				t.Fatal(err)
			}
			if !specApplied {
				deployment.Annotations[workload.AnnotationSpecHash] = "an-older-spec"
			}
			deployment.Generation = generation
			deployment.Spec.Replicas = nil
			if hasDeploymentReplicas {
				deployment.Spec.Replicas = &deploymentReplicas
			}
			deployment.Status = appsv1.DeploymentStatus{
				ObservedGeneration: observedGeneration,
				Replicas:           replicas,
				UpdatedReplicas:    updated,
				ReadyReplicas:      ready,
				AvailableReplicas:  available,
				Conditions:         robottest.DeploymentConditionsFromFuzz(conditions),
			}
			deployment = robottest.Decoded(t, deployment)
		}
		syncErr := robottest.SyncErrorFromFuzz(errKind, strings.ToValidUTF8(errMessage, "\uFFFD"))
		now := metav1.NewTime(robottest.FixtureNow.Add(time.Duration(nanos % int64(24*time.Hour))))

		robotBefore, deploymentBefore := robot.DeepCopy(), deployment.DeepCopy()
		status := Compute(robot, deployment, nil, syncErr, now)
		if d := diff.Diff(robotBefore, robot); d != "" {
			t.Fatalf("computeStatus changed the Robot:\n%s", d)
		}
		if d := diff.Diff(deploymentBefore, deployment); d != "" {
			t.Fatalf("computeStatus changed the Deployment:\n%s", d)
		}
		if again := Compute(robot, deployment, nil, syncErr, now); !reflect.DeepEqual(again, status) {
			t.Fatalf("computeStatus is not deterministic:\n%s", diff.Diff(status, again))
		}

		checkStatus(t, robot, deployment, syncErr, now, status)

		// Written with server-side apply, stored, and read back by the
		// informer: the next sync, later, computes the same status, and
		// so writes nothing.
		written := robot.DeepCopy()
		written.Status = robotv1beta1.RobotStatus{}
		if err := workload.RoundTrip(status, &written.Status); err != nil {
			t.Fatal(err)
		}
		next := Compute(written, deployment, nil, syncErr, metav1.NewTime(now.Add(time.Hour)))
		if !apiequality.Semantic.DeepEqual(next, written.Status) {
			t.Fatalf("the status read back differs from what the next sync computes: a write on every sync\n%s", diff.Diff(written.Status, next))
		}
	})
}

// checkStatus checks the invariants of status, computed for robot and
// deployment at now after a sync that returned syncErr.
func checkStatus(t *testing.T, robot *robotv1beta1.Robot, deployment *appsv1.Deployment, syncErr error, now metav1.Time, status robotv1beta1.RobotStatus) {
	t.Helper()
	if status.ObservedGeneration != robot.Generation || status.DeploymentName != workload.DeploymentName(robot) || status.Selector != workload.SelectorString(robot) {
		t.Errorf("status %+v: want observedGeneration %d, deploymentName %s, selector %s", status, robot.Generation, workload.DeploymentName(robot), workload.SelectorString(robot))
	}
	var counts appsv1.DeploymentStatus
	if deployment != nil {
		counts = deployment.Status
	}
	if status.Replicas != counts.Replicas || status.UpdatedReplicas != counts.UpdatedReplicas || status.ReadyReplicas != counts.ReadyReplicas || status.AvailableReplicas != counts.AvailableReplicas {
		t.Errorf("replica counts %+v, want the Deployment's %+v", status, counts)
	}

	// Others' conditions stay as they are; the operator's are there once
	// each, and nothing else is.
	var foreign []metav1.Condition
	for _, c := range robot.Status.Conditions {
		if !ownCondition(c.Type) {
			foreign = append(foreign, c)
		}
	}
	var foreignAfter []metav1.Condition
	own := map[string]metav1.Condition{}
	for _, c := range status.Conditions {
		if !ownCondition(c.Type) {
			foreignAfter = append(foreignAfter, c)
			continue
		}
		if _, ok := own[c.Type]; ok {
			t.Errorf("condition %s appears twice: %+v", c.Type, status.Conditions)
		}
		own[c.Type] = c
	}
	if !apiequality.Semantic.DeepEqual(foreign, foreignAfter) {
		t.Errorf("others' conditions changed:\n%s", diff.Diff(foreign, foreignAfter))
	}
	for _, conditionType := range []string{robotv1beta1.ConditionReady, robotv1beta1.ConditionAvailable, robotv1beta1.ConditionProgressing, robotv1beta1.ConditionSynced} {
		c, ok := own[conditionType]
		if !ok {
			t.Errorf("no %s condition: %+v", conditionType, status.Conditions)
			continue
		}
		switch c.Status {
		case metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown:
		default:
			t.Errorf("%s status %q: the CRD accepts only True, False and Unknown", c.Type, c.Status)
		}
		// The CRD's limits on a condition (metav1.Condition's markers).
		if !conditionReason.MatchString(c.Reason) || len(c.Reason) > 1024 {
			t.Errorf("%s reason %q: the CRD refuses it", c.Type, c.Reason)
		}
		if len(c.Message) > maxMessageLength || !utf8.ValidString(c.Message) {
			t.Errorf("%s message of %d bytes (valid UTF-8: %t), want at most %d bytes of UTF-8", c.Type, len(c.Message), utf8.ValidString(c.Message), maxMessageLength)
		}
		if c.ObservedGeneration != robot.Generation {
			t.Errorf("%s observedGeneration %d, want %d", c.Type, c.ObservedGeneration, robot.Generation)
		}
		wantTime := now
		if before := meta.FindStatusCondition(robot.Status.Conditions, c.Type); before != nil && before.Status == c.Status {
			wantTime = before.LastTransitionTime
		}
		if !c.LastTransitionTime.Equal(&wantTime) {
			t.Errorf("%s lastTransitionTime %v, want %v", c.Type, c.LastTransitionTime, wantTime)
		}
	}

	if synced := own[robotv1beta1.ConditionSynced]; (synced.Status == metav1.ConditionTrue) != (syncErr == nil) {
		t.Errorf("Synced %s after a sync that returned %v", synced.Status, syncErr)
	}
	if deployment == nil || !observed(deployment) {
		for _, conditionType := range []string{robotv1beta1.ConditionAvailable, robotv1beta1.ConditionProgressing} {
			if c := own[conditionType]; c.Status != metav1.ConditionUnknown {
				t.Errorf("%s is %s, but no Deployment status describes the latest spec", conditionType, c.Status)
			}
		}
	}
	if own[robotv1beta1.ConditionReady].Status != metav1.ConditionTrue {
		return
	}
	// Ready: the Deployment runs the Robot's spec, the Deployment
	// controller has seen it, and every desired replica is updated and
	// available, with no old one left.
	switch {
	case deployment == nil:
		t.Errorf("Ready without a Deployment")
	case !observed(deployment):
		t.Errorf("Ready, but the Deployment controller observed generation %d of %d", deployment.Status.ObservedGeneration, deployment.Generation)
	case syncErr != nil && !specApplied(robot, deployment, syncErr):
		t.Errorf("Ready, but the sync failed (%v) and the Deployment does not hold the Robot's spec", syncErr)
	default:
		desired, s := ptr.Deref(deployment.Spec.Replicas, 1), deployment.Status
		if s.UpdatedReplicas != desired || s.AvailableReplicas < desired || s.Replicas > s.UpdatedReplicas {
			t.Errorf("Ready with %d desired replicas and status %+v", desired, s)
		}
		if c := deploymentCondition(deployment, appsv1.DeploymentProgressing); c != nil && c.Reason == robotv1beta1.ReasonProgressDeadlineExceeded {
			t.Errorf("Ready past the progress deadline")
		}
	}
}
