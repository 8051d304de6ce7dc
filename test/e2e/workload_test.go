//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// workloadRobot is a Robot that sets every pod template field, as a service
// would. Its ServiceAccount and PriorityClass must exist: the API server
// refuses pods that name missing ones.
func workloadRobot(ns, name, serviceAccount, priorityClass string) *robotv1beta1.Robot {
	robot := newRobot(ns, name, 2)
	robot.Spec.Ports = httpPorts(8080)
	robot.Spec.Command = []string{"/agnhost"}
	robot.Spec.Args = []string{"netexec", "--http-port=8080"}
	robot.Spec.ImagePullPolicy = corev1.PullIfNotPresent
	robot.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-credentials"}}
	robot.Spec.EnvFrom = []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}},
		{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-db"}, Optional: ptr.To(true)}},
	}
	// No timeouts, periods or thresholds: the API server fills them in,
	// which must not make the operator write again.
	robot.Spec.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}}
	robot.Spec.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 20}
	robot.Spec.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 8080}}, FailureThreshold: 30}
	robot.Spec.Volumes = []robotv1beta1.RobotVolume{
		{Name: "config", ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}},
		{Name: "tls", Secret: &corev1.SecretVolumeSource{SecretName: "web-tls", DefaultMode: ptr.To[int32](0o400)}},
		{Name: "cache", EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}},
		{Name: "identity", Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token"}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
		}}},
	}
	robot.Spec.VolumeMounts = []corev1.VolumeMount{
		{Name: "config", MountPath: "/etc/web", ReadOnly: true},
		{Name: "tls", MountPath: "/etc/tls", ReadOnly: true},
		{Name: "cache", MountPath: "/var/cache/web"},
		{Name: "identity", MountPath: "/var/run/identity", ReadOnly: true},
	}
	robot.Spec.Placement.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	robot.Spec.Placement.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	robot.Spec.Placement.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
		Weight: 100,
		PodAffinityTerm: corev1.PodAffinityTerm{
			TopologyKey:   "kubernetes.io/hostname",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelRobot: name}},
		},
	}}}}
	robot.Spec.Placement.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       "kubernetes.io/hostname",
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{labelRobot: name}},
	}}
	robot.Spec.Placement.PriorityClassName = priorityClass
	robot.Spec.PodLabels = map[string]string{"sidecar.istio.io/inject": "false"}
	robot.Spec.PodAnnotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}
	robot.Spec.ServiceAccountName = serviceAccount
	robot.Spec.SecurityProfile = robotv1beta1.SecurityProfileRestricted
	return robot
}

// createWorkloadPrerequisites creates the ServiceAccount and the
// PriorityClass a workloadRobot names.
func createWorkloadPrerequisites(t *testing.T, ns string) (serviceAccount, priorityClass string) {
	t.Helper()
	serviceAccount, priorityClass = "web", ns
	if _, err := env.kube.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceAccount}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ServiceAccount %s/%s: %v", ns, serviceAccount, err)
	}
	if _, err := env.kube.SchedulingV1().PriorityClasses().Create(t.Context(), &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: priorityClass},
		Value:      1000,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PriorityClass %s: %v", priorityClass, err)
	}
	t.Cleanup(func() {
		if err := env.kube.SchedulingV1().PriorityClasses().Delete(context.Background(), priorityClass, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting PriorityClass %s: %v", priorityClass, err)
		}
	})
	return serviceAccount, priorityClass
}

// sameJSON reports whether want and got encode to the same JSON values, so
// that a field compares equal whatever Go type holds it.
func sameJSON(t *testing.T, want, got any) bool {
	t.Helper()
	decode := func(v any) any {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	return reflect.DeepEqual(decode(want), decode(got))
}

// TestWorkloadFields: a Robot that sets every pod template field gets a
// Deployment that carries them and pods that run; the API server's defaults
// inside those fields (probe periods and thresholds, volume modes, a token's
// expiry) cause no write; a hand edit of them is reverted in one write; and
// an operator that syncs the Robot again from scratch writes nothing.
func TestWorkloadFields(t *testing.T) {
	exclusive(t, "it restarts the shared operator")
	requireAuditLog(t)
	ns := newNamespace(t)
	serviceAccount, priorityClass := createWorkloadPrerequisites(t, ns)
	start := time.Now()
	robot := createRobot(t, workloadRobot(ns, "web", serviceAccount, priorityClass))
	robot = waitForRobot(t, ns, "web", convergeTimeout, "is Ready, its rollout reported complete", robotSettled)
	pods := waitForPods(t, ns, robot.Status.Selector, 2, image1)

	d := getDeployment(t, ns, "web")
	pod := d.Spec.Template.Spec
	c := robotContainer(t, d)
	spec := robot.Spec
	for _, check := range []struct {
		field     string
		want, got any
	}{
		{"command", spec.Command, c.Command},
		{"imagePullPolicy", spec.ImagePullPolicy, c.ImagePullPolicy},
		{"imagePullSecrets", spec.ImagePullSecrets, pod.ImagePullSecrets},
		{"envFrom", spec.EnvFrom, c.EnvFrom},
		{"readinessProbe.httpGet", spec.ReadinessProbe.HTTPGet.Port, c.ReadinessProbe.HTTPGet.Port},
		{"livenessProbe.periodSeconds", spec.LivenessProbe.PeriodSeconds, c.LivenessProbe.PeriodSeconds},
		{"startupProbe.failureThreshold", spec.StartupProbe.FailureThreshold, c.StartupProbe.FailureThreshold},
		{"volumeMounts", spec.VolumeMounts, c.VolumeMounts},
		{"volume names", []string{"config", "tls", "cache", "identity"}, volumeNames(pod.Volumes)},
		{"nodeSelector", spec.Placement.NodeSelector, pod.NodeSelector},
		{"tolerations", spec.Placement.Tolerations, pod.Tolerations},
		{"affinity", spec.Placement.Affinity, pod.Affinity},
		{"topologySpreadConstraints", spec.Placement.TopologySpreadConstraints, pod.TopologySpreadConstraints},
		{"priorityClassName", spec.Placement.PriorityClassName, pod.PriorityClassName},
		{"podLabels", "false", d.Spec.Template.Labels["sidecar.istio.io/inject"]},
		{"selector label", "web", d.Spec.Template.Labels[labelRobot]},
		{"podAnnotations", spec.PodAnnotations, d.Spec.Template.Annotations},
		{"serviceAccountName", serviceAccount, pod.ServiceAccountName},
		{"automountServiceAccountToken", ptr.To(false), pod.AutomountServiceAccountToken},
		{"pod runAsNonRoot", ptr.To(true), pod.SecurityContext.RunAsNonRoot},
		{"container capabilities", &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, c.SecurityContext.Capabilities},
	} {
		if !sameJSON(t, check.want, check.got) {
			t.Errorf("the Deployment's %s is %s, want %s", check.field, asJSON(check.got), asJSON(check.want))
		}
	}
	// The API server's defaults are there, not the operator's.
	if c.ReadinessProbe.PeriodSeconds != 10 || c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTP || ptr.Deref(pod.Volumes[0].ConfigMap.DefaultMode, 0) != 0o644 {
		t.Errorf("the API server's defaults are missing: readiness probe %s, volume %s", asJSON(c.ReadinessProbe), asJSON(pod.Volumes[0]))
	}
	if p := pods[0].Spec; p.ServiceAccountName != serviceAccount || ptr.Deref(p.AutomountServiceAccountToken, true) || p.PriorityClassName != priorityClass {
		t.Errorf("pod %s: serviceAccountName %q, automountServiceAccountToken %v, priorityClassName %q", pods[0].Name, p.ServiceAccountName, p.AutomountServiceAccountToken, p.PriorityClassName)
	}
	waitForNoOperatorWrites(t, ns)
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Namespace: ns, Resource: "deployments", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 1 {
		t.Errorf("the operator wrote the Deployment %d times from the Robot's creation to its rollout, want 1 (the create): %v", len(writes), writes)
	}

	// A hand edit of several of the fields, atomic ones among them.
	edited := time.Now()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := getDeployment(t, ns, "web")
		pod := &d.Spec.Template.Spec
		c := &pod.Containers[0]
		c.ReadinessProbe.HTTPGet.Path = "/"
		pod.Tolerations[0].Value = "other"
		pod.AutomountServiceAccountToken = ptr.To(true)
		pod.Volumes[0].ConfigMap.Name = "other"
		d.Spec.Template.Labels["sidecar.istio.io/inject"] = "true"
		_, err := env.kube.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{FieldManager: "e2e-other-writer"})
		return err
	})
	if err != nil {
		t.Fatalf("editing Deployment %s/web: %v", ns, err)
	}
	d = waitForDeployment(t, ns, "web", "has the Robot's fields back", func(d *appsv1.Deployment) bool {
		pod := d.Spec.Template.Spec
		return pod.Containers[0].ReadinessProbe.HTTPGet.Path == "/ready" && pod.Tolerations[0].Value == "web" &&
			!ptr.Deref(pod.AutomountServiceAccountToken, true) && pod.Volumes[0].ConfigMap.Name == "web-config" &&
			d.Spec.Template.Labels["sidecar.istio.io/inject"] == "false"
	})
	waitForEventMessage(t, ns, robot, "DeploymentUpdated", "the Robot asks for")
	waitForRobot(t, ns, "web", convergeTimeout, "is settled after the edit", robotSettled)
	waitForNoOperatorWrites(t, ns)
	writes, err = env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: edited, Namespace: ns, Resource: "deployments", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 1 {
		t.Errorf("the operator wrote the Deployment %d times after the edit, want 1: %v", len(writes), writes)
	}

	// A fresh operator compares every Robot with its Deployment: the
	// defaulted fields must still not look like drift.
	restarted := restartOperator(t)
	time.Sleep(10 * time.Second)
	writes, err = env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: restarted, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		t.Errorf("write by the restarted operator, which had nothing to do: %s", &w)
	}
}

// waitForNoOperatorWrites waits until the operator has written nothing in
// namespace ns for a couple of seconds: the tests that run beside this one
// keep it busy elsewhere.
func waitForNoOperatorWrites(t *testing.T, ns string) {
	t.Helper()
	const quiet = 2 * time.Second
	eventually(t, convergeTimeout, fmt.Sprintf("no write by the operator in %s for %v", ns, quiet), func(context.Context) (bool, string, error) {
		writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: time.Now().Add(-quiet), Namespace: ns})
		if err != nil {
			return false, "", err
		}
		return len(writes) == 0, fmt.Sprintf("%d writes in the last %v", len(writes), quiet), nil
	})
}

func volumeNames(volumes []corev1.Volume) []string {
	var names []string
	for _, v := range volumes {
		names = append(names, v.Name)
	}
	return names
}

func asJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(data)
}

// TestWorkloadInvalidRobotsAreRejected: the CRD refuses a volume of a kind
// other than configMap, secret, emptyDir and projected, and pod labels that
// would override the operator's, with the messages docs/validation.md shows.
func TestWorkloadInvalidRobotsAreRejected(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	for _, tc := range []struct {
		input    string
		name     string
		spec     []string
		contains []string
	}{
		{"a `hostPath` volume", "host-path", []string{"image: " + image1, "volumes: [{name: host, hostPath: {path: /}}]"},
			[]string{"spec.volumes[0]", "a volume must have exactly one of configMap, secret, emptyDir or projected: hostPath and other volume kinds are not allowed"}},
		{"a volume with two sources", "two-sources", []string{"image: " + image1, "volumes: [{name: two, emptyDir: {}, secret: {secretName: s}}]"},
			[]string{"spec.volumes[0]", "a volume must have exactly one of configMap, secret, emptyDir or projected"}},
		{"`podLabels: {robot.dev/name: other}`", "selector-label", []string{"image: " + image1, "podLabels: {robot.dev/name: other}"},
			[]string{"spec.podLabels", "podLabels cannot set robot.dev/name, app.kubernetes.io/managed-by, app.kubernetes.io/name or app.kubernetes.io/instance"}},
		{"a `volumeMounts` entry naming no volume", "mount-nothing", []string{"image: " + image1, "volumeMounts: [{name: missing, mountPath: /x}]"},
			[]string{"spec.volumeMounts", "every volumeMounts entry must name a volume of spec.volumes"}},
		{"`securityProfile: privileged`", "privileged", []string{"image: " + image1, "securityProfile: privileged"},
			[]string{"spec.securityProfile", `supported values: "baseline", "restricted"`}},
		{"`serviceAccountName: Admin`", "bad-service-account", []string{"image: " + image1, "serviceAccountName: Admin"},
			[]string{"spec.serviceAccountName", "serviceAccountName must be the name of a ServiceAccount"}},
	} {
		manifest := robotYAML(ns, tc.name, tc.spec...)
		code, apiMsg := sendRaw(t, ns, tc.name, manifest, false)
		t.Logf("| %s | %d | %s |", tc.input, code, markdownCode(apiMsg))
		if code != http.StatusUnprocessableEntity {
			t.Errorf("%s: the API server answered %d, want %d (Invalid): %s", tc.input, code, http.StatusUnprocessableEntity, apiMsg)
		}
		for _, want := range tc.contains {
			if !strings.Contains(apiMsg, want) {
				t.Errorf("%s: the message does not say %q: %s", tc.input, want, apiMsg)
			}
		}
		// kubectl validates fields strictly: it names the unknown
		// field as well.
		if _, stderr, err := kubectl(t.Context(), manifest, "apply", "-f", "-"); err == nil {
			t.Errorf("%s: kubectl apply succeeded, want it refused", tc.input)
		} else {
			t.Logf("%s: kubectl: %s", tc.input, strings.TrimSpace(stderr))
		}
	}
}

// TestRestrictedUnderPodSecurity: in a namespace that enforces Pod Security
// "restricted", the pods of a Robot with securityProfile restricted are
// admitted, and those of a baseline Robot are refused by the admission
// plugin, which the Deployment reports.
func TestRestrictedUnderPodSecurity(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	patch := `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/enforce-version":"latest"}}}`
	if _, err := env.kube.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling namespace %s: %v", ns, err)
	}

	restricted := newRobot(ns, "restricted", 2)
	restricted.Spec.Ports = httpPorts(8080)
	restricted.Spec.SecurityProfile = robotv1beta1.SecurityProfileRestricted
	restricted.Spec.Volumes = []robotv1beta1.RobotVolume{{Name: "cache", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	restricted.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
	restricted = createRobot(t, restricted)
	baseline := createRobot(t, newRobot(ns, "baseline", 1))

	restricted = waitForRobotReady(t, ns, "restricted")
	waitForPods(t, ns, restricted.Status.Selector, 2, image1)
	for _, e := range replicaSetEvents(t, ns, "FailedCreate") {
		if strings.HasPrefix(e.InvolvedObject.Name, "restricted-") {
			t.Errorf("ReplicaSet %s could not create a pod: %s", e.InvolvedObject.Name, e.Message)
		}
	}

	d := waitForDeployment(t, ns, "baseline", "reports that Pod Security refused its pods", func(d *appsv1.Deployment) bool {
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue && c.Reason == "FailedCreate" {
				return true
			}
		}
		return false
	})
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure {
			t.Logf("Deployment baseline: %s %s: %s", c.Type, c.Reason, c.Message)
			if !strings.Contains(c.Message, `violates PodSecurity "restricted:latest"`) {
				t.Errorf("the ReplicaFailure message does not name Pod Security restricted: %s", c.Message)
			}
		}
	}
	// The ReplicaSet controller writes its Event after the condition, and
	// on a busy cluster that can take a while.
	eventually(t, convergeTimeout, "a FailedCreate event from Pod Security for the baseline Robot's ReplicaSet", func(context.Context) (bool, string, error) {
		var seen []string
		for _, e := range replicaSetEvents(t, ns, "FailedCreate") {
			seen = append(seen, e.InvolvedObject.Name+": "+e.Message)
			if strings.HasPrefix(e.InvolvedObject.Name, "baseline-") && strings.Contains(e.Message, "violates PodSecurity") {
				t.Logf("ReplicaSet %s: %s", e.InvolvedObject.Name, e.Message)
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("FailedCreate events: %q", seen), nil
	})
	if got := getRobot(t, ns, baseline.Name); readyCondition(got) != nil && readyCondition(got).Status == metav1.ConditionTrue {
		t.Errorf("the baseline Robot is Ready although none of its pods was admitted: %s", summarizeRobot(got))
	}
}

// replicaSetEvents returns the events of the given reason about ReplicaSets
// in ns.
func replicaSetEvents(t *testing.T, ns, reason string) []corev1.Event {
	t.Helper()
	list, err := env.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=ReplicaSet,reason=" + reason,
	})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	return list.Items
}

// TestWorkloadShapesCostOneWrite: Robots with many combinations of the pod
// template fields, each left to the API server's defaults where it can be
// (probe timings, volume modes, a projected token's expiry, a downward API
// field's version), are created with one write each and then cost none, not
// even to an operator that starts afresh and so compares each Deployment the
// API server stores with what its Robot asks for: that is never drift. (The
// operator that created a Deployment trusts its create and compares nothing
// until a spec changes, so only a fresh one can tell.)
func TestWorkloadShapesCostOneWrite(t *testing.T) {
	exclusive(t, "it restarts the shared operator")
	requireAuditLog(t)
	ns := newNamespace(t)
	serviceAccount, priorityClass := createWorkloadPrerequisites(t, ns)
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	start := time.Now()
	var names []string
	for i := range 12 {
		name := fmt.Sprintf("shape-%d", i)
		createRobot(t, randomWorkloadRobot(rng, i, ns, name, serviceAccount, priorityClass))
		names = append(names, name)
	}
	for _, name := range names {
		waitForRobot(t, ns, name, convergeTimeout, "is settled", robotSettled)
	}
	waitForNoOperatorWrites(t, ns)
	for _, name := range names {
		writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Namespace: ns, Resource: "deployments", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(writes) != 1 {
			robot := getRobot(t, ns, name)
			t.Errorf("Robot %s: the operator wrote its Deployment %d times, want 1 (the create): %v\nspec: %s", name, len(writes), writes, asJSON(robot.Spec))
		}
	}

	restarted := restartOperator(t)
	time.Sleep(10 * time.Second)
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: restarted, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		robot := getRobot(t, ns, w.ObjectRef.Name)
		t.Errorf("write by the restarted operator, which had nothing to do: %s\nspec: %s", &w, asJSON(robot.Spec))
	}
}

// randomWorkloadRobot sets a random choice of the pod template fields, each
// in one of a few shapes: none in round 0, all in round 1.
func randomWorkloadRobot(rng *rand.Rand, round int, ns, name, serviceAccount, priorityClass string) *robotv1beta1.Robot {
	robot := newRobot(ns, name, 1)
	set := func() bool {
		switch round {
		case 0:
			return false
		case 1:
			return true
		}
		return rng.IntN(2) == 0
	}
	spec := &robot.Spec
	if set() {
		spec.Ports = httpPorts(8080)
	}
	probes := []func() *corev1.Probe{
		func() *corev1.Probe {
			return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}}
		},
		func() *corev1.Probe {
			return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, TimeoutSeconds: 2}
		},
		func() *corev1.Probe {
			return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 8080}}}
		},
		func() *corev1.Probe {
			return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, FailureThreshold: 5}
		},
	}
	for _, probe := range []**corev1.Probe{&spec.ReadinessProbe, &spec.LivenessProbe, &spec.StartupProbe} {
		if set() {
			*probe = probes[rng.IntN(len(probes))]()
		}
	}
	if set() {
		spec.Command = []string{"/agnhost"}
	}
	if set() {
		spec.ImagePullPolicy = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}[rng.IntN(3)]
	}
	if set() {
		spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-credentials"}}
	}
	if set() {
		spec.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "config"}}}}
	}
	if set() {
		spec.Volumes = []robotv1beta1.RobotVolume{
			{Name: "config", ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "config"}}},
			{Name: "secret", Secret: &corev1.SecretVolumeSource{SecretName: "secret", Items: []corev1.KeyToPath{{Key: "k", Path: "k"}}}},
			{Name: "scratch", EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1024Mi"))}},
			{Name: "projected", Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "config"}}},
			}}},
		}
		for _, volume := range spec.Volumes {
			if set() {
				spec.VolumeMounts = append(spec.VolumeMounts, corev1.VolumeMount{Name: volume.Name, MountPath: "/mnt/" + volume.Name, ReadOnly: rng.IntN(2) == 0})
			}
		}
	}
	if set() {
		spec.Placement.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	}
	if set() {
		spec.Placement.Tolerations = []corev1.Toleration{{Key: "dedicated", Value: "web"}, {Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)}}
	}
	if set() {
		spec.Placement.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}}}},
		}}}
	}
	if set() {
		spec.Placement.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelRobot: name}}}}
	}
	if set() {
		spec.Placement.PriorityClassName = priorityClass
	}
	if set() {
		spec.PodLabels = map[string]string{"team": "blue"}
	}
	if set() {
		spec.PodAnnotations = map[string]string{"example.com/note": "robot"}
	}
	if set() {
		spec.ServiceAccountName = serviceAccount
	}
	if set() {
		spec.AutomountServiceAccountToken = ptr.To(rng.IntN(2) == 0)
	}
	if set() {
		spec.SecurityProfile = []robotv1beta1.SecurityProfile{robotv1beta1.SecurityProfileBaseline, robotv1beta1.SecurityProfileRestricted}[rng.IntN(2)]
	}
	return robot
}

// TestWorkloadDefaults: the two defaults every Robot gets, no ServiceAccount
// token and, with a port, a TCP readiness probe on it, reach the Deployment
// and its pods, cost no write beyond the create once the API server has
// defaulted the probe, and come back after a hand edit removes them.
func TestWorkloadDefaults(t *testing.T) {
	parallel(t)
	requireAuditLog(t)
	ns := newNamespace(t)
	start := time.Now()
	robot := newRobot(ns, "plain", 1)
	robot.Spec.Ports = httpPorts(8080)
	createRobot(t, robot)
	robot = waitForRobot(t, ns, "plain", convergeTimeout, "is settled", robotSettled)

	wantProbe := &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	}
	hasDefaults := func(pod *corev1.PodSpec) bool {
		return reflect.DeepEqual(pod.Containers[0].ReadinessProbe, wantProbe) &&
			pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken
	}
	d := getDeployment(t, ns, "plain")
	if pod := &d.Spec.Template.Spec; !hasDefaults(pod) {
		t.Errorf("Deployment %s/plain: readinessProbe %s, automountServiceAccountToken %s; want %s and false",
			ns, asJSON(pod.Containers[0].ReadinessProbe), asJSON(pod.AutomountServiceAccountToken), asJSON(wantProbe))
	}
	pods := waitForPods(t, ns, robot.Status.Selector, 1, image1)
	if pod := &pods[0].Spec; !hasDefaults(pod) {
		t.Errorf("pod %s: readinessProbe %s, automountServiceAccountToken %s; want %s and false",
			pods[0].Name, asJSON(pod.Containers[0].ReadinessProbe), asJSON(pod.AutomountServiceAccountToken), asJSON(wantProbe))
	}
	for _, v := range pods[0].Spec.Volumes {
		if v.Projected != nil {
			t.Errorf("pod %s mounts a token volume %q although the Robot asked for none", pods[0].Name, v.Name)
		}
	}
	waitForNoOperatorWrites(t, ns)
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Namespace: ns, Resource: "deployments", Name: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	// A sync that runs before the Deployment's own watch event has reached
	// the cache (a loaded machine) creates it again and is answered 409:
	// that changes nothing. What this test guards is that the defaults do
	// not make the operator apply the Deployment again.
	writes = slices.DeleteFunc(writes, func(w auditEvent) bool { return w.code() == http.StatusConflict })
	if len(writes) != 1 {
		t.Errorf("the operator wrote the Deployment %d times from the Robot's creation to its rollout, want 1 (the create): %v", len(writes), writes)
	}

	// Another writer removes the probe and turns the token on.
	edited := time.Now()
	mustKubectl(t, "patch", "deployment/plain", "-n", ns, "--type=json", "-p",
		`[{"op":"remove","path":"/spec/template/spec/containers/0/readinessProbe"},`+
			`{"op":"replace","path":"/spec/template/spec/automountServiceAccountToken","value":true}]`)
	waitForDeployment(t, ns, "plain", "has the defaults back", func(d *appsv1.Deployment) bool { return hasDefaults(&d.Spec.Template.Spec) })
	waitForRobot(t, ns, "plain", convergeTimeout, "is settled after the edit", robotSettled)
	waitForNoOperatorWrites(t, ns)
	writes, err = env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: edited, Namespace: ns, Resource: "deployments", Name: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 1 {
		t.Errorf("the operator wrote the Deployment %d times after the edit, want 1: %v", len(writes), writes)
	}
}
