package main

// Fuzz tests of the pure functions: the Deployment a Robot becomes, the drift
// check, and the status. The seeds below and the inputs kept in
// testdata/fuzz/<Name>/ run with every `go test`; `make fuzz` runs each
// target for a while to look for new ones.
//
// The Robots are decoded from the fuzz input and kept only when the CRD
// admits them (robotFromFuzz). The API server's side is simulated in test
// code: the JSON it decodes an apply from, the defaults it sets on an
// apps/v1 Deployment (apiServerDefaults), the part of its validation a
// Robot's fields can fail (deploymentRejected), and the JSON the informer
// decodes the stored object from.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// FuzzNoDriftAfterApply: the Deployment built from any Robot the CRD admits,
// once the API server has defaulted and stored it, and whatever other writers
// add next to the operator's fields, shows no drift: the next sync of the
// Robot writes nothing.
func FuzzNoDriftAfterApply(f *testing.F) {
	for _, seed := range robotSeeds() {
		for _, foreign := range []uint8{0, 0xff} {
			for _, workload := range [][]byte{nil, workloadSeeds()[0]} {
				f.Add(seed.name, seed.deploymentName, seed.image, seed.replicas, seed.hasReplicas, seed.port, seed.hasPort,
					seed.argBytes(), seed.env, seed.resourceBytes(), foreign, workload)
			}
		}
	}
	for _, workload := range workloadSeeds() {
		seed := robotSeeds()[0]
		for _, foreign := range []uint8{0, 0xff} {
			f.Add(seed.name, seed.deploymentName, seed.image, seed.replicas, seed.hasReplicas, seed.port, seed.hasPort,
				seed.argBytes(), seed.env, seed.resourceBytes(), foreign, workload)
		}
	}
	f.Fuzz(func(t *testing.T, name, deploymentName, image string, replicas int32, hasReplicas bool, port int32, hasPort bool,
		args, env, resources []byte, foreign uint8, workload []byte) {
		robot, skip := robotFromFuzz(t, name, deploymentName, image, replicas, hasReplicas, port, hasPort, args, env, resources)
		if skip != "" {
			t.Skip(skip)
		}
		// The pod template fields, through the API server as well.
		workloadFromFuzz(robot, workload)
		robot = decodedAgain(t, robot)
		if reason := workloadRefused(robot); reason != "" {
			t.Skip("the CRD refuses the Robot: " + reason)
		}
		desired, err := newDeployment(robot)
		if err != nil {
			t.Fatalf("newDeployment refuses a Robot the CRD admits: %v\nspec: %s", err, asJSON(t, robot.Spec))
		}

		// The next sync decodes the Robot afresh: it must ask for the
		// same Deployment, or the spec hash changes on every sync.
		again, err := newDeployment(decodedAgain(t, robot))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := again.Annotations[annotationSpecHash], desired.Annotations[annotationSpecHash]; got != want {
			t.Fatalf("the same Robot decoded again hashes to %s, not %s", got, want)
		}

		stored, skip := storedAfterApply(t, robot, desired, foreign)
		if skip != "" {
			t.Skip(skip)
		}
		if drift := deploymentDrift(desired, stored); drift != "" {
			t.Fatalf("drift right after the apply: %s\nspec: %s\nstored: %s", drift, asJSON(t, robot.Spec), asJSON(t, stored.Spec.Template.Spec))
		}
	})
}

// FuzzDriftDetectsOwnedChanges: a change someone makes to a field the Robot
// sets (replicas, the image, an env var, an arg, the port, a resource
// quantity, a pod template field) is always drift, so the operator puts it
// back.
func FuzzDriftDetectsOwnedChanges(f *testing.F) {
	for i, seed := range robotSeeds() {
		for which := range uint8(ownedFields) {
			f.Add(seed.name, seed.deploymentName, seed.image, seed.replicas, seed.hasReplicas, seed.port, seed.hasPort,
				seed.argBytes(), seed.env, seed.resourceBytes(), uint8(i%2*0xff), which, "changed", int32(i), []byte(nil))
		}
	}
	// Each pod template field changed, on a Robot that sets all of them
	// and one that sets each alone.
	for i, workload := range workloadSeeds() {
		seed := robotSeeds()[0]
		for number := range int32(19 * 2) {
			f.Add(seed.name, seed.deploymentName, seed.image, seed.replicas, seed.hasReplicas, seed.port, seed.hasPort,
				seed.argBytes(), seed.env, seed.resourceBytes(), uint8(i%2*0xff), uint8(ownedWorkload), "changed", number, workload)
		}
	}
	f.Fuzz(func(t *testing.T, name, deploymentName, image string, replicas int32, hasReplicas bool, port int32, hasPort bool,
		args, env, resources []byte, foreign uint8, which uint8, value string, number int32, workload []byte) {
		robot, skip := robotFromFuzz(t, name, deploymentName, image, replicas, hasReplicas, port, hasPort, args, env, resources)
		if skip != "" {
			t.Skip(skip)
		}
		workloadFromFuzz(robot, workload)
		robot = decodedAgain(t, robot)
		if reason := workloadRefused(robot); reason != "" {
			t.Skip("the CRD refuses the Robot: " + reason)
		}
		desired, err := newDeployment(robot)
		if err != nil {
			t.Fatalf("newDeployment refuses a Robot the CRD admits: %v", err)
		}
		stored, skip := storedAfterApply(t, robot, desired, foreign)
		if skip != "" {
			t.Skip(skip)
		}
		if deploymentDrift(desired, stored) != "" {
			t.Skip("drift before any change: FuzzNoDriftAfterApply's concern")
		}

		edited := stored.DeepCopy()
		change := changeOwnedField(robot, edited, which, strings.ToValidUTF8(value, "\uFFFD"), number)
		if change == "" {
			t.Skip("the Robot does not set the field chosen")
		}
		// The edit goes through the API server too.
		apiServerDefaults(edited)
		if reason := deploymentRejected(edited); reason != "" {
			t.Skip("the API server refuses the edit: " + reason)
		}
		edited = decoded(t, edited)
		if apiequality.Semantic.DeepEqual(edited.Spec, stored.Spec) {
			t.Fatalf("the edit (%s) changed nothing: the test's mistake", change)
		}
		if drift := deploymentDrift(desired, edited); drift == "" {
			t.Fatalf("no drift after %s\nspec: %s\nedited: %s", change, asJSON(t, robot.Spec), asJSON(t, edited.Spec.Template.Spec))
		}
	})
}

// FuzzComputeStatus: whatever the Deployment reports and however the sync
// failed, the status has each of the operator's conditions once, with a
// reason and a message the CRD accepts; Ready is True only for a Deployment
// that runs the Robot's spec with every desired replica updated and
// available; computeStatus is deterministic and leaves its inputs alone; and
// the status, once written and read back, is what the next sync computes,
// so that sync writes nothing.
func FuzzComputeStatus(f *testing.F) {
	deploymentConditions := fuzzEncode(
		byte(0), byte(0), "MinimumReplicasAvailable", byte(1), "Deployment has minimum availability.", byte(1),
		byte(1), byte(0), "NewReplicaSetAvailable", byte(1), "ReplicaSet has successfully progressed.", byte(1))
	deadline := fuzzEncode(
		byte(0), byte(1), "MinimumReplicasUnavailable", byte(1), "Deployment does not have minimum availability.", byte(1),
		byte(1), byte(1), "ProgressDeadlineExceeded", byte(1), `ReplicaSet "test-5d4f" has timed out progressing.`, byte(1))
	// What apps/v1 does not validate: any status, any reason.
	odd := fuzzEncode(
		byte(0), byte(4), "Maybe", "not a reason", byte(1), "\u00e9\u00e8", byte(200),
		byte(3), "Custom", byte(2), "Reason:With,Punctuation_", byte(1), strings.Repeat("m", 255), byte(9),
		byte(1), byte(0), "Ready", byte(255), strings.Repeat("m", 100), byte(20))
	// A 422 that quotes what it refuses, at length.
	invalidEnvNames := strings.Repeat(`spec.template.spec.containers[0].env[0].name: Invalid value: "größe": `+
		`a valid environment variable name must consist only of printable ASCII characters other than '='; `, 8)
	previous := fuzzEncode(byte(0), byte(0), byte(1), byte(1), byte(4), byte(0), byte(3), byte(2))
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
		robot := newRobot("test", specReplicas)
		robot.Generation = robotGeneration
		robot.Status.Conditions = previousConditions(previous)
		// As the informer decodes it.
		robot = decodedAgain(t, robot)

		var deployment *appsv1.Deployment
		if hasDeployment {
			desired, err := newDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			deployment = &appsv1.Deployment{}
			if err := roundTrip(desired, deployment); err != nil {
				t.Fatal(err)
			}
			if !specApplied {
				deployment.Annotations[annotationSpecHash] = "an-older-spec"
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
				Conditions:         deploymentConditionsFromFuzz(conditions),
			}
			deployment = decoded(t, deployment)
		}
		syncErr := syncErrorFromFuzz(errKind, strings.ToValidUTF8(errMessage, "\uFFFD"))
		now := metav1.NewTime(fixtureNow.Add(time.Duration(nanos % int64(24*time.Hour))))

		robotBefore, deploymentBefore := robot.DeepCopy(), deployment.DeepCopy()
		status := computeStatus(robot, deployment, nil, syncErr, now)
		if d := diff.Diff(robotBefore, robot); d != "" {
			t.Fatalf("computeStatus changed the Robot:\n%s", d)
		}
		if d := diff.Diff(deploymentBefore, deployment); d != "" {
			t.Fatalf("computeStatus changed the Deployment:\n%s", d)
		}
		if again := computeStatus(robot, deployment, nil, syncErr, now); !reflect.DeepEqual(again, status) {
			t.Fatalf("computeStatus is not deterministic:\n%s", diff.Diff(status, again))
		}

		checkStatus(t, robot, deployment, syncErr, now, status)

		// Written with server-side apply, stored, and read back by the
		// informer: the next sync, later, computes the same status, and
		// so writes nothing.
		written := robot.DeepCopy()
		written.Status = robotv1alpha1.RobotStatus{}
		if err := roundTrip(status, &written.Status); err != nil {
			t.Fatal(err)
		}
		next := computeStatus(written, deployment, nil, syncErr, metav1.NewTime(now.Add(time.Hour)))
		if !apiequality.Semantic.DeepEqual(next, written.Status) {
			t.Fatalf("the status read back differs from what the next sync computes: a write on every sync\n%s", diff.Diff(written.Status, next))
		}
	})
}

// checkStatus checks the invariants of status, computed for robot and
// deployment at now after a sync that returned syncErr.
func checkStatus(t *testing.T, robot *robotv1alpha1.Robot, deployment *appsv1.Deployment, syncErr error, now metav1.Time, status robotv1alpha1.RobotStatus) {
	t.Helper()
	if status.ObservedGeneration != robot.Generation || status.DeploymentName != deploymentName(robot) || status.Selector != selectorString(robot) {
		t.Errorf("status %+v: want observedGeneration %d, deploymentName %s, selector %s", status, robot.Generation, deploymentName(robot), selectorString(robot))
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
	for _, conditionType := range []string{robotv1alpha1.ConditionReady, robotv1alpha1.ConditionAvailable, robotv1alpha1.ConditionProgressing, robotv1alpha1.ConditionSynced} {
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
		if before := findCondition(robot.Status, c.Type); before.Type != "" && before.Status == c.Status {
			wantTime = before.LastTransitionTime
		}
		if !c.LastTransitionTime.Equal(&wantTime) {
			t.Errorf("%s lastTransitionTime %v, want %v", c.Type, c.LastTransitionTime, wantTime)
		}
	}

	if synced := own[robotv1alpha1.ConditionSynced]; (synced.Status == metav1.ConditionTrue) != (syncErr == nil) {
		t.Errorf("Synced %s after a sync that returned %v", synced.Status, syncErr)
	}
	if deployment == nil || !observed(deployment) {
		for _, conditionType := range []string{robotv1alpha1.ConditionAvailable, robotv1alpha1.ConditionProgressing} {
			if c := own[conditionType]; c.Status != metav1.ConditionUnknown {
				t.Errorf("%s is %s, but no Deployment status describes the latest spec", conditionType, c.Status)
			}
		}
	}
	if own[robotv1alpha1.ConditionReady].Status != metav1.ConditionTrue {
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
		if c := deploymentCondition(deployment, appsv1.DeploymentProgressing); c != nil && c.Reason == robotv1alpha1.ReasonProgressDeadlineExceeded {
			t.Errorf("Ready past the progress deadline")
		}
	}
}

// robotSeed is a readable form of robotFromFuzz's input.
type robotSeed struct {
	name, deploymentName, image string
	replicas                    int32
	hasReplicas                 bool
	port                        int32
	hasPort                     bool
	args                        []string
	env                         []byte // see envFromFuzz
	resources                   string // "lc=500m,rm=64Mi": see resourceBytes
}

// argBytes are s.args as robotFromFuzz reads them.
func (s robotSeed) argBytes() []byte { return []byte(strings.Join(s.args, "\x00")) }

// resourceBytes are s.resources as resourcesFromFuzz reads them. Each entry
// is l(imits) or r(equests), then c(pu), m(emory), e(phemeral-storage) or x
// (example.com/widget), "=", and a quantity as the Robot's YAML gives it.
func (s robotSeed) resourceBytes() []byte {
	var out []byte
	for entry := range strings.SplitSeq(s.resources, ",") {
		if entry == "" {
			continue
		}
		key, value, _ := strings.Cut(entry, "=")
		b := byte(strings.IndexByte("cmex", key[1]) << 1)
		if key[0] == 'r' {
			b |= 1
		}
		out = append(out, fuzzEncode(b, byte(0), value)...)
	}
	return out
}

// robotSeeds are typical Robots, and a few that once found bugs.
func robotSeeds() []robotSeed {
	return []robotSeed{
		{image: "registry.example/robot:1.0", replicas: 2, hasReplicas: true, port: 8080, hasPort: true,
			env: fuzzEncode(envValue, "MODE", "demo")},
		{name: "minimal", image: "robot"},
		{name: "every.field", deploymentName: "robot-runner", image: "ghcr.io/acme/robot@sha256:0123456789abcdef", replicas: 0, hasReplicas: true,
			port: 65535, hasPort: true, args: []string{"serve", "--verbose", "", "--name=$(POD)"},
			env: fuzzEncode(
				envValue, "MODE", "prod",
				envValue, "EMPTY", "",
				envFieldRef, "POD", byte(0), byte(0),
				envFieldRef, "NODE", byte(3), byte(1),
				envConfigMapKeyRef, "FROM_CM", byte(1), "config.key", byte(2),
				envSecretKeyRef, "FROM_SECRET", byte(0), "password", byte(0),
				envResourceFieldRef, "CPU_LIMIT", byte(0), byte(1),
				envFileKeyRef, "FROM_FILE", "KEY", byte(0), byte(0)),
			resources: "lc=500m,lm=128Mi,rc=0.25,rm=64Mi,le=1Gi"},
		{image: "robot:latest", replicas: 1000, hasReplicas: true, port: 1, hasPort: true, args: []string{"\u00fcber", "a\nb", `"quoted"`},
			env: fuzzEncode(envValue, "weird name.with-dots", "$(MODE) \u2028 \x00", envValue, "lower", "1")},
		// Quantities the API server stores in another form.
		{image: "robot:1", resources: "lc=1000m,lm=1.5Gi,rc=0.5,rm=0.5Gi,re=1e3,le=2e3"},
		// Limits alone, and an extended resource.
		{image: "robot:1", resources: "lc=2,lm=1G,lx=1,rx=1"},
		// Quantities finer than the thousandths the API server keeps.
		{image: "robot:1", resources: "rc=100u,lc=1.2336,rm=0.5m,lm=1e-9"},
	}
}

// robotFromFuzz decodes a Robot, as the operator's informer would see it,
// from the fuzz input. It returns why when the CRD would refuse the Robot
// (or robotFromFuzz cannot make one of the input): such Robots never reach
// the operator.
func robotFromFuzz(t *testing.T, name, deploymentName, image string, replicas int32, hasReplicas bool, port int32, hasPort bool,
	args, env, resources []byte) (*robotv1alpha1.Robot, string) {
	t.Helper()
	if name == "" {
		name = "test"
	}
	robot := &robotv1alpha1.Robot{
		TypeMeta:   metav1.TypeMeta{APIVersion: robotv1alpha1.SchemeGroupVersion.String(), Kind: "Robot"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, UID: types.UID("robot-uid"), Generation: 1},
		Spec: robotv1alpha1.RobotSpec{
			Image:          image,
			DeploymentName: deploymentName,
			// The CRD's default.
			Replicas: ptr.To[int32](1),
		},
	}
	if hasReplicas {
		robot.Spec.Replicas = &replicas
	}
	if hasPort {
		robot.Spec.Port = &port
	}
	if len(args) > 0 {
		robot.Spec.Args = strings.Split(string(args), "\x00")
	}
	robot.Spec.Env = envFromFuzz(env)
	var skip string
	if robot.Spec.Resources, skip = resourcesFromFuzz(t, resources); skip != "" {
		return nil, skip
	}
	// The Robot as its JSON reaches the API server and comes back to the
	// operator: strings are UTF-8 from here on.
	robot = decodedAgain(t, robot)
	return robot, crdRefuses(robot)
}

var (
	// The CRD's rules, as in pkg/apis/robot/v1alpha1/types.go.
	imageSpace       = regexp.MustCompile(`[[:space:]]`)
	deploymentNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// The pattern the CRD gives a quantity (from corev1's OpenAPI).
	quantityPattern = regexp.MustCompile(`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`)
)

// crdRefuses says why the API server refuses robot under the CRD's schema,
// or returns "".
func crdRefuses(robot *robotv1alpha1.Robot) string {
	spec := &robot.Spec
	switch {
	case len(validation.IsDNS1123Subdomain(robot.Name)) > 0 || len(robot.Name) > 63:
		return "metadata.name"
	case utf8.RuneCountInString(spec.Image) < 1 || utf8.RuneCountInString(spec.Image) > 512 || imageSpace.MatchString(spec.Image):
		return "spec.image"
	case spec.Replicas != nil && (*spec.Replicas < 0 || *spec.Replicas > 1000):
		return "spec.replicas"
	case spec.DeploymentName != "" && (len(spec.DeploymentName) > 63 || !deploymentNameRE.MatchString(spec.DeploymentName)):
		return "spec.deploymentName"
	case spec.Port != nil && (*spec.Port < 1 || *spec.Port > 65535):
		return "spec.port"
	case len(spec.Args) > 256:
		return "spec.args"
	case len(spec.Env) > 256:
		return "spec.env"
	}
	// listType=map: one entry per name.
	names := map[string]bool{}
	for _, e := range spec.Env {
		if names[e.Name] {
			return "spec.env: a name twice"
		}
		names[e.Name] = true
	}
	return ""
}

// The kinds of env var envFromFuzz decodes.
const (
	envValue byte = iota
	envFieldRef
	envConfigMapKeyRef
	envSecretKeyRef
	envResourceFieldRef
	envFileKeyRef
	envKinds
)

var (
	envFieldPaths    = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.podIP", "status.podIPs", "metadata.labels['app.kubernetes.io/name']", "metadata.annotations['example.com/a']"}
	envRefNames      = []string{"config", "app-secret", "a.b.c"}
	envResources     = []string{"limits.cpu", "requests.cpu", "limits.memory", "requests.memory", "limits.ephemeral-storage", "requests.ephemeral-storage"}
	envDivisors      = []string{"", "1", "1m", "1000m", "1Mi", "1k", "0.001"}
	envFileVolumes   = []string{"env-files", "config"}
	envFilePaths     = []string{"env", "sub/dir/vars.env"}
	envOptionalKinds = []*bool{nil, ptr.To(false), ptr.To(true)}
)

// envFromFuzz decodes env vars from data (see fuzzBytes): for each, its
// kind, its name, and what the kind needs.
func envFromFuzz(data []byte) []corev1.EnvVar {
	b := &fuzzBytes{data}
	var env []corev1.EnvVar
	for b.more() && len(env) <= 256 {
		kind, name := b.byte()%envKinds, b.string()
		e := corev1.EnvVar{Name: name}
		switch kind {
		case envValue:
			e.Value = b.string()
		case envFieldRef:
			ref := &corev1.ObjectFieldSelector{FieldPath: pick(b, envFieldPaths)}
			if b.byte()%2 == 1 {
				ref.APIVersion = "v1"
			}
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: ref}
		case envConfigMapKeyRef:
			ref := &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: pick(b, envRefNames)}, Key: b.string()}
			ref.Optional = pick(b, envOptionalKinds)
			e.ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: ref}
		case envSecretKeyRef:
			ref := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: pick(b, envRefNames)}, Key: b.string()}
			ref.Optional = pick(b, envOptionalKinds)
			e.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: ref}
		case envResourceFieldRef:
			ref := &corev1.ResourceFieldSelector{Resource: pick(b, envResources)}
			if divisor := pick(b, envDivisors); divisor != "" {
				ref.Divisor = resource.MustParse(divisor)
			}
			e.ValueFrom = &corev1.EnvVarSource{ResourceFieldRef: ref}
		case envFileKeyRef:
			ref := &corev1.FileKeySelector{Key: b.string(), VolumeName: pick(b, envFileVolumes), Path: pick(b, envFilePaths)}
			// The CRD defaults optional to false.
			ref.Optional = cmpOr(pick(b, envOptionalKinds), ptr.To(false))
			e.ValueFrom = &corev1.EnvVarSource{FileKeyRef: ref}
		}
		env = append(env, e)
	}
	return env
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// resourcesFromFuzz decodes resources from data (see fuzzBytes): for each,
// a byte that says limits or requests (bit 0) and which resource (cpu,
// memory, ephemeral-storage or the extended example.com/widget), then a
// quantity as the Robot's YAML may give it: either any string, or a number
// with a decimal point and a suffix, which reaches the forms the API server
// stores differently sooner. It returns why when the CRD refuses one.
func resourcesFromFuzz(t *testing.T, data []byte) (corev1.ResourceRequirements, string) {
	t.Helper()
	var out corev1.ResourceRequirements
	b := &fuzzBytes{data}
	for b.more() {
		key := b.byte()
		list := &out.Limits
		if key&1 == 1 {
			list = &out.Requests
		}
		name := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "example.com/widget"}[key>>1%4]
		var value string
		if b.byte()%2 == 0 {
			value = b.string()
		} else {
			value = decimal(uint16(b.byte())<<8|uint16(b.byte()), int(b.byte()%6)) + pick(b, quantitySuffixes)
		}
		if !quantityPattern.MatchString(value) {
			return out, "a quantity does not match the CRD's pattern"
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			// The CRD's pattern, corev1's, admits a few strings
			// that ParseQuantity refuses, such as "1e1.5"
			// (kubernetes-sigs/controller-tools#665). Such a Robot
			// never reaches newDeployment: the operator's informer
			// cannot decode it. Only a rule in the CRD can keep it
			// out.
			return out, fmt.Sprintf("the operator cannot decode the quantity %q: %v", value, err)
		}
		if dec := q.DeepCopy(); -dec.AsDec().Scale() > 1000 {
			// Far beyond any machine; comparing it with another
			// quantity (as deploymentRejected does) takes seconds.
			return out, "a quantity above 10^1000"
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[name] = q
	}
	return out, ""
}

var quantitySuffixes = []string{"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "e-3", "e-7", "E+2"}

// decimal writes n with places digits after the decimal point.
func decimal(n uint16, places int) string {
	digits := fmt.Sprintf("%0*d", places+1, n)
	if places == 0 {
		return digits
	}
	return digits[:len(digits)-places] + "." + digits[len(digits)-places:]
}

// storedAfterApply returns desired as the API server stores it after the apply, with
// what other writers set next to it (chosen by the bits of foreign), and as
// the operator's informer decodes it. It returns why when the API server
// refuses it: a Robot the CRD admits may still ask for a Deployment the API
// server's validation refuses (an env var named "A=B" or "", a request above
// its limit). No such Deployment is ever stored, so none can drift: the apply
// gets a 422, which syncDeployment reports as InvalidSpec.
func storedAfterApply(t *testing.T, robot *robotv1alpha1.Robot, desired any, foreign uint8) (*appsv1.Deployment, string) {
	t.Helper()
	// The apply request, as the API server decodes it.
	var d appsv1.Deployment
	if err := roundTrip(desired, &d); err != nil {
		t.Fatal(err)
	}
	addForeignFields(&d, robot, foreign)
	apiServerDefaults(&d)
	if reason := deploymentRejected(&d); reason != "" {
		return nil, "the API server refuses the Deployment: " + reason
	}
	d.UID = "deployment-uid"
	d.ResourceVersion = "7"
	d.Generation = 1
	d.CreationTimestamp = metav1.NewTime(fixtureNow)
	// The Deployment controller's.
	d.Annotations["deployment.kubernetes.io/revision"] = "1"
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas}
	return decoded(t, &d), ""
}

// addForeignFields adds to d what other writers (kubectl, a mutating
// webhook, a service mesh) set in fields the Robot does not, one kind per
// bit of which.
func addForeignFields(d *appsv1.Deployment, robot *robotv1alpha1.Robot, which uint8) {
	pod := &d.Spec.Template.Spec
	c := &pod.Containers[0]
	if which&(1<<0) != 0 {
		name := "INJECTED"
		for slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
			name += "_"
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: "1"})
	}
	if which&(1<<1) != 0 {
		d.Annotations["example.com/owner"] = "team-a"
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-11-22T12:00:00Z"
	}
	if which&(1<<2) != 0 {
		pod.Containers = append(pod.Containers, corev1.Container{Name: "sidecar", Image: "registry.example/proxy:1",
			Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}}})
	}
	if which&(1<<3) != 0 {
		d.Labels["team"] = "blue"
		if _, ok := robot.Spec.PodLabels["team"]; !ok {
			d.Spec.Template.Labels["team"] = "blue"
		}
	}
	if which&(1<<4) != 0 {
		// Requests defaulted from limits. The API server does this for
		// Pods only (core/v1 SetDefaults_Pod), not for the template of
		// a Deployment; a webhook might.
		for name, limit := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; !ok {
				if c.Resources.Requests == nil {
					c.Resources.Requests = corev1.ResourceList{}
				}
				c.Resources.Requests[name] = limit.DeepCopy()
			}
		}
	}
	if which&(1<<5) != 0 {
		port := int32(9090)
		for robot.Spec.Port != nil && *robot.Spec.Port == port {
			port++
		}
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "metrics", ContainerPort: port})
	}
	if which&(1<<6) != 0 {
		_, limit := robot.Spec.Resources.Limits[corev1.ResourceEphemeralStorage]
		_, request := robot.Spec.Resources.Requests[corev1.ResourceEphemeralStorage]
		if !limit && !request {
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			c.Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse("2Gi")
		}
	}
	if which&(1<<7) != 0 {
		// Only where the Robot leaves the field unset: a field both set
		// is a conflict, which the apply settles in the operator's favour.
		if robot.Spec.ImagePullPolicy == "" {
			c.ImagePullPolicy = corev1.PullAlways
		}
		c.SecurityContext.ReadOnlyRootFilesystem = ptr.To(true)
		pod.SecurityContext.RunAsNonRoot = ptr.To(true)
		if robot.Spec.ServiceAccountName == "" {
			pod.ServiceAccountName = "robot"
		}
	}
	// The volumes a file key reference needs: without one the API server
	// refuses the Deployment, and the operator does not create volumes.
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FileKeyRef != nil &&
			!slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == e.ValueFrom.FileKeyRef.VolumeName }) {
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: e.ValueFrom.FileKeyRef.VolumeName,
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
	}
}

// apiServerDefaults sets the defaults that the API server sets on an apps/v1
// Deployment, in the fields the operator's Deployment and addForeignFields'
// additions can carry: k8s.io/kubernetes' pkg/apis/apps/v1
// SetObjectDefaults_Deployment, with core/v1 SetDefaults_PodSpec,
// SetDefaults_Container and SetDefaults_ResourceList, as of v1.37. Not
// included: what those set in fields none of them carry (lifecycle hooks,
// volume sources a Robot cannot have). Requests are not defaulted from
// limits: core/v1 does that for Pods only, not for a pod template.
func apiServerDefaults(d *appsv1.Deployment) {
	spec := &d.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.Strategy.Type == "" {
		spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if spec.Strategy.RollingUpdate == nil {
			spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if spec.Strategy.RollingUpdate.MaxUnavailable == nil {
			spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}
		if spec.Strategy.RollingUpdate.MaxSurge == nil {
			spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%"))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if spec.ProgressDeadlineSeconds == nil {
		spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}

	pod := &spec.Template.Spec
	if pod.ServiceAccountName == "" {
		pod.ServiceAccountName = pod.DeprecatedServiceAccount
	}
	pod.DeprecatedServiceAccount = pod.ServiceAccountName
	if pod.DNSPolicy == "" {
		pod.DNSPolicy = corev1.DNSClusterFirst
	}
	if pod.RestartPolicy == "" {
		pod.RestartPolicy = corev1.RestartPolicyAlways
	}
	if pod.SecurityContext == nil {
		pod.SecurityContext = &corev1.PodSecurityContext{}
	}
	if pod.TerminationGracePeriodSeconds == nil {
		pod.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if pod.SchedulerName == "" {
		pod.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range pod.Volumes {
		volumeDefaults(&pod.Volumes[i])
	}
	for _, containers := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
		for i := range containers {
			containerDefaults(&containers[i])
		}
	}
	if pod.Resources != nil {
		roundUpToMilli(pod.Resources.Limits)
		roundUpToMilli(pod.Resources.Requests)
	}
	roundUpToMilli(pod.Overhead)
}

// containerDefaults: core/v1 SetDefaults_Container, and the defaults
// SetObjectDefaults_Deployment sets inside a container.
func containerDefaults(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil {
			if from.FieldRef != nil && from.FieldRef.APIVersion == "" {
				from.FieldRef.APIVersion = "v1"
			}
			if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
				from.FileKeyRef.Optional = ptr.To(false)
			}
		}
	}
	roundUpToMilli(c.Resources.Limits)
	roundUpToMilli(c.Resources.Requests)
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if probe != nil {
			probeDefaults(probe)
		}
	}
}

// probeDefaults: core/v1 SetDefaults_Probe and SetDefaults_HTTPGetAction,
// and the default of a gRPC probe's service that SetObjectDefaults_Deployment
// sets.
func probeDefaults(p *corev1.Probe) {
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if get := p.HTTPGet; get != nil {
		if get.Path == "" {
			get.Path = "/"
		}
		if get.Scheme == "" {
			get.Scheme = corev1.URISchemeHTTP
		}
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

// volumeDefaults: core/v1 SetDefaults_Volume, and the defaults
// SetObjectDefaults_Deployment sets inside the volume sources a Robot or
// addForeignFields can give (SetDefaults_ConfigMapVolumeSource,
// SetDefaults_SecretVolumeSource, SetDefaults_ProjectedVolumeSource,
// SetDefaults_ObjectFieldSelector, SetDefaults_ServiceAccountTokenProjection).
func volumeDefaults(v *corev1.Volume) {
	if reflect.ValueOf(v.VolumeSource).IsZero() {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if v.ConfigMap != nil && v.ConfigMap.DefaultMode == nil {
		v.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if v.Secret != nil && v.Secret.DefaultMode == nil {
		v.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if p := v.Projected; p != nil {
		if p.DefaultMode == nil {
			p.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range p.Sources {
			source := &p.Sources[i]
			if source.DownwardAPI != nil {
				for j := range source.DownwardAPI.Items {
					if ref := source.DownwardAPI.Items[j].FieldRef; ref != nil && ref.APIVersion == "" {
						ref.APIVersion = "v1"
					}
				}
			}
			if token := source.ServiceAccountToken; token != nil && token.ExpirationSeconds == nil {
				token.ExpirationSeconds = ptr.To[int64](3600)
			}
		}
	}
}

// imageTag is the tag of an image reference as k8s.io/kubernetes'
// parsers.ParseImageName gives it: "latest" when there is neither a tag nor a
// digest. (ParseImageName also rejects malformed references, which then
// default to IfNotPresent; the operator does not set the pull policy, so the
// difference cannot show as drift.)
func imageTag(image string) string {
	name, digest, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[i+1:]
	}
	if digest != "" {
		return ""
	}
	return "latest"
}

// roundUpToMilli: core/v1 SetDefaults_ResourceList.
func roundUpToMilli(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}

// deploymentRejected says why the API server's validation refuses d, already
// defaulted, or returns "". It checks what the Robot's fields and
// addForeignFields' additions can get wrong; the rest of what the operator
// sets is always valid.
func deploymentRejected(d *appsv1.Deployment) string {
	if d.Spec.Replicas != nil && *d.Spec.Replicas < 0 {
		return "spec.replicas"
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Image == "" {
			return "image: required"
		}
		for _, p := range c.Ports {
			if p.ContainerPort < 1 || p.ContainerPort > 65535 {
				return "containerPort"
			}
		}
		for _, e := range c.Env {
			// Any printable ASCII but '=', not only C identifiers,
			// since RelaxedEnvironmentVariableValidation went GA
			// (v1.34).
			if msgs := validation.IsRelaxedEnvVarName(e.Name); len(msgs) > 0 {
				return fmt.Sprintf("env name %q: %s", e.Name, msgs[0])
			}
			if reason := envSourceRejected(e); reason != "" {
				return fmt.Sprintf("env %q: %s", e.Name, reason)
			}
		}
		if reason := resourcesRejected(c.Resources); reason != "" {
			return reason
		}
	}
	return ""
}

// envSourceRejected: what core validation's validateEnvVarValueFrom refuses
// among the sources envFromFuzz makes.
func envSourceRejected(e corev1.EnvVar) string {
	from := e.ValueFrom
	switch {
	case from == nil:
		return ""
	case e.Value != "":
		return "valueFrom with a value"
	case from.ConfigMapKeyRef != nil:
		return keyRejected(from.ConfigMapKeyRef.Key)
	case from.SecretKeyRef != nil:
		return keyRejected(from.SecretKeyRef.Key)
	case from.FileKeyRef != nil:
		if msgs := validation.IsRelaxedEnvVarName(from.FileKeyRef.Key); len(msgs) > 0 {
			return "fileKeyRef.key: " + msgs[0]
		}
	case from.ResourceFieldRef != nil:
		divisor := from.ResourceFieldRef.Divisor
		if divisor.IsZero() {
			return ""
		}
		allowed := []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
		if strings.HasSuffix(from.ResourceFieldRef.Resource, ".cpu") {
			allowed = []string{"1m", "1"}
		}
		if !slices.Contains(allowed, divisor.String()) {
			return "resourceFieldRef.divisor " + divisor.String()
		}
	}
	return ""
}

func keyRejected(key string) string {
	if key == "" {
		return "key: required"
	}
	if msgs := validation.IsConfigMapKey(key); len(msgs) > 0 {
		return "key: " + msgs[0]
	}
	return ""
}

// resourcesRejected: core validation's validateResourceRequirements, for
// the resources resourcesFromFuzz makes.
func resourcesRejected(r corev1.ResourceRequirements) string {
	extended := func(name corev1.ResourceName) bool { return strings.Contains(string(name), "/") }
	for _, list := range []corev1.ResourceList{r.Limits, r.Requests} {
		for name, q := range list {
			if q.Sign() < 0 {
				return fmt.Sprintf("resources: %s is negative", name)
			}
			if extended(name) && q.MilliValue()%1000 != 0 {
				return fmt.Sprintf("resources: %s must be an integer", name)
			}
		}
	}
	for name, request := range r.Requests {
		limit, ok := r.Limits[name]
		switch {
		case !ok && extended(name):
			return fmt.Sprintf("resources: %s needs a limit", name)
		case ok && extended(name) && request.Cmp(limit) != 0:
			return fmt.Sprintf("resources: %s request must equal its limit", name)
		case ok && request.Cmp(limit) > 0:
			return fmt.Sprintf("resources: %s request above its limit", name)
		}
	}
	return ""
}

// The fields the Robot sets that changeOwnedField changes.
const (
	ownedReplicas = iota
	ownedImage
	ownedEnv
	ownedArgs
	ownedPort
	ownedResources
	ownedWorkload // one of the pod template fields, chosen by number
	ownedFields
)

// changeOwnedField changes, in d, one field that robot sets, chosen by
// which; value and number say how. It returns what it did, or "" when robot
// does not set that field.
func changeOwnedField(robot *robotv1alpha1.Robot, d *appsv1.Deployment, which uint8, value string, number int32) string {
	c := &d.Spec.Template.Spec.Containers[0]
	index := func(n int) int { return int(uint32(number) % uint32(n)) }
	different := func(old string) string {
		if value == old {
			return old + "x"
		}
		return value
	}
	switch which % ownedFields {
	case ownedReplicas:
		n := max(number, -(number + 1)) // not negative
		if n == *d.Spec.Replicas {
			n = (n + 1) % 1001
		}
		d.Spec.Replicas = &n
		return fmt.Sprintf("replicas set to %d", n)
	case ownedImage:
		c.Image = different(c.Image)
		return fmt.Sprintf("image set to %q", c.Image)
	case ownedEnv:
		if len(robot.Spec.Env) == 0 {
			return ""
		}
		name := robot.Spec.Env[index(len(robot.Spec.Env))].Name
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		e := &c.Env[i]
		switch {
		case number < 0:
			c.Env = slices.Delete(c.Env, i, i+1)
			return fmt.Sprintf("env %q removed", name)
		case e.ValueFrom != nil:
			e.ValueFrom, e.Value = nil, value
			if e.Value == "" {
				e.Value = "x"
			}
			return fmt.Sprintf("env %q set to the value %q instead of its source", name, e.Value)
		case e.Value == "":
			// Not owned: the apply leaves out an empty value (the
			// field is omitempty), so server-side apply gives the
			// operator only the variable's name, and a value someone
			// else sets is theirs. Applying "value": "" explicitly
			// would need the drift check to take a missing value for
			// an empty one; see kubernetes/kubernetes#128924 for how
			// server-side apply treats such empty values.
			return ""
		default:
			e.Value = different(e.Value)
			return fmt.Sprintf("env %q set to %q", name, e.Value)
		}
	case ownedArgs:
		if len(c.Args) == 0 {
			return ""
		}
		i := index(len(c.Args))
		switch uint32(number) % 3 {
		case 0:
			c.Args[i] = different(c.Args[i])
			return fmt.Sprintf("arg %d set to %q", i, c.Args[i])
		case 1:
			c.Args = slices.Delete(c.Args, i, i+1)
			return fmt.Sprintf("arg %d removed", i)
		default:
			c.Args = append(c.Args, value)
			return fmt.Sprintf("arg %q appended", value)
		}
	case ownedPort:
		if robot.Spec.Port == nil {
			return ""
		}
		i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == portName })
		if number < 0 {
			c.Ports[i].Protocol = corev1.ProtocolUDP
			return "port's protocol set to UDP"
		}
		p := 1 + number%65535
		if p == c.Ports[i].ContainerPort {
			p = p%65535 + 1
		}
		c.Ports[i].ContainerPort = p
		return fmt.Sprintf("port set to %d", p)
	case ownedResources:
		type entry struct {
			list corev1.ResourceList
			kind string
			name corev1.ResourceName
		}
		var set []entry
		for _, kind := range []struct {
			name        string
			robot, live corev1.ResourceList
		}{{"limits", robot.Spec.Resources.Limits, c.Resources.Limits}, {"requests", robot.Spec.Resources.Requests, c.Resources.Requests}} {
			for _, name := range slices.Sorted(maps.Keys(kind.robot)) {
				set = append(set, entry{kind.live, kind.name, name})
			}
		}
		if len(set) == 0 {
			return ""
		}
		e := set[index(len(set))]
		q := e.list[e.name]
		step := resource.MustParse("1m")
		if strings.Contains(string(e.name), "/") || e.name == corev1.ResourceMemory || e.name == corev1.ResourceEphemeralStorage {
			step = resource.MustParse("1")
		}
		if number < 0 && q.Cmp(step) >= 0 {
			q.Sub(step)
		} else {
			q.Add(step)
		}
		e.list[e.name] = q
		return fmt.Sprintf("%s.%s set to %s", e.kind, e.name, q.String())
	case ownedWorkload:
		return changeWorkloadField(robot, d, number)
	}
	return ""
}

// previousConditions decodes the conditions a Robot already has (see
// fuzzBytes): for each, its type (the operator's or another writer's) and
// status. One per type, as the CRD's listType=map keeps them.
func previousConditions(data []byte) []metav1.Condition {
	b := &fuzzBytes{data}
	types := []string{robotv1alpha1.ConditionReady, robotv1alpha1.ConditionAvailable, robotv1alpha1.ConditionProgressing, robotv1alpha1.ConditionSynced, "Audited", "example.com/Checked"}
	statuses := []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}
	var out []metav1.Condition
	for b.more() {
		c := metav1.Condition{Type: pick(b, types), Status: pick(b, statuses), Reason: "Before", Message: "before",
			ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(fixtureNow.Add(-time.Hour))}
		if !slices.ContainsFunc(out, func(o metav1.Condition) bool { return o.Type == c.Type }) {
			out = append(out, c)
		}
	}
	return out
}

// deploymentConditionsFromFuzz decodes a Deployment's conditions (see
// fuzzBytes): for each, a type (Available, Progressing, ReplicaFailure or
// any string), a status (True, False, Unknown, empty or any string), a
// reason, and a message repeated up to 255 times.
func deploymentConditionsFromFuzz(data []byte) []appsv1.DeploymentCondition {
	b := &fuzzBytes{data}
	var out []appsv1.DeploymentCondition
	for b.more() {
		var c appsv1.DeploymentCondition
		switch t := b.byte() % 4; t {
		case 3:
			c.Type = appsv1.DeploymentConditionType(b.string())
		default:
			c.Type = []appsv1.DeploymentConditionType{appsv1.DeploymentAvailable, appsv1.DeploymentProgressing, appsv1.DeploymentReplicaFailure}[t]
		}
		switch s := b.byte() % 5; s {
		case 4:
			c.Status = corev1.ConditionStatus(b.string())
		default:
			c.Status = []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown, ""}[s]
		}
		c.Reason = strings.Repeat(b.string(), max(1, int(b.byte())))
		c.Message = strings.Repeat(b.string(), max(1, int(b.byte())))
		out = append(out, c)
	}
	return out
}

// syncErrorFromFuzz returns an error of each kind a sync can return.
func syncErrorFromFuzz(kind uint8, message string) error {
	switch kind % 10 {
	case 0:
		return nil
	case 1:
		return errors.New(message)
	case 2:
		return &invalidSpecError{errors.New(message)}
	case 3:
		return &nameTakenError{name: message, owner: "Robot/" + message}
	case 4:
		return &fieldConflictError{deployment: "test", field: ".spec.template.spec.containers[name=\"robot\"].image", manager: message, err: errors.New(message)}
	case 5:
		return &earlierRobotError{name: message}
	case 6:
		return &syncTimeoutError{key: cache.ObjectName{Namespace: "default", Name: message}, timeout: 30 * time.Second}
	case 7:
		return fmt.Errorf("applying Deployment default/test: %w", &invalidSpecError{errors.New(message)})
	case 8:
		return errors.Join(errors.New(message), &nameTakenError{name: "test"})
	default:
		return errNamespaceTerminating
	}
}

// fuzzBytes reads a fuzz input as a sequence of small values. Past the end
// it reads zeros and empty strings, so that every input decodes.
type fuzzBytes struct{ data []byte }

func (b *fuzzBytes) more() bool { return len(b.data) > 0 }

func (b *fuzzBytes) byte() byte {
	if len(b.data) == 0 {
		return 0
	}
	v := b.data[0]
	b.data = b.data[1:]
	return v
}

// string reads a length byte, then that many bytes.
func (b *fuzzBytes) string() string {
	n := min(int(b.byte()), len(b.data))
	s := string(b.data[:n])
	b.data = b.data[n:]
	return s
}

func pick[T any](b *fuzzBytes, options []T) T { return options[int(b.byte())%len(options)] }

// fuzzEncode writes what fuzzBytes reads: bytes as they are, strings after
// their length.
func fuzzEncode(values ...any) []byte {
	var out []byte
	for _, v := range values {
		switch v := v.(type) {
		case byte:
			out = append(out, v)
		case string:
			if len(v) > 255 {
				panic("fuzzEncode: a string longer than 255 bytes")
			}
			out = append(out, byte(len(v)))
			out = append(out, v...)
		default:
			panic(fmt.Sprintf("fuzzEncode: %T", v))
		}
	}
	return out
}

// decodedAgain returns robot after a JSON round trip, as the operator's
// informer decodes it.
func decodedAgain(t *testing.T, robot *robotv1alpha1.Robot) *robotv1alpha1.Robot {
	t.Helper()
	out := &robotv1alpha1.Robot{}
	if err := roundTrip(robot, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// decoded returns d after a JSON round trip, as the operator's informer
// decodes it.
func decoded(t *testing.T, d *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	out := &appsv1.Deployment{}
	if err := roundTrip(d, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
