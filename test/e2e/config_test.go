//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// configDigestAnnotation is the pod template's annotation of a Robot that
// rolls on config changes (workload.AnnotationConfigDigest).
const configDigestAnnotation = "robot.dev/config-digest"

// configRobot returns a Robot whose pods read the ConfigMap configMap through
// envFrom and, when set, the Secret secret through a volume; rolling on
// their changes when rolls is set.
func configRobot(ns, name, configMap, secret string, rolls *bool) *robotv1beta1.Robot {
	robot := newRobot(ns, name, 1)
	robot.Spec.RollOnConfigChange = rolls
	robot.Spec.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}
	if secret != "" {
		robot.Spec.Volumes = []robotv1beta1.RobotVolume{{Name: "secret", Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
	}
	return robot
}

// changeConfigMap sets key in the ConfigMap ns/name to value.
func changeConfigMap(t *testing.T, ns, name, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"data":{"setting":%q}}`, value)
	if _, err := env.kube.CoreV1().ConfigMaps(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("changing ConfigMap %s/%s: %v", ns, name, err)
	}
}

// TestConfigChangeRollsOptedInRobots: a ConfigMap read by three Robots, two
// of which roll on config changes, changes: the two Deployments get a new
// pod template (a new config digest) and roll, and the third is not
// touched.
func TestConfigChangeRollsOptedInRobots(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	if _, err := env.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: ns}, Data: map[string]string{"setting": "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rolling, still := []string{"rolls-a", "rolls-b"}, "stays"
	for _, name := range rolling {
		createRobot(t, configRobot(ns, name, "shared", "", ptr.To(true)))
	}
	createRobot(t, configRobot(ns, still, "shared", "", nil))
	before := map[string]*appsv1.Deployment{}
	for _, name := range append(rolling, still) {
		waitForRobotReady(t, ns, name)
		before[name] = getDeployment(t, ns, name)
	}
	for _, name := range rolling {
		if before[name].Spec.Template.Annotations[configDigestAnnotation] == "" {
			t.Fatalf("Robot %s rolls on config changes, and its pod template has no %s: %v", name, configDigestAnnotation, before[name].Spec.Template.Annotations)
		}
	}
	if digest, ok := before[still].Spec.Template.Annotations[configDigestAnnotation]; ok {
		t.Fatalf("Robot %s does not roll on config changes, and its pod template has %s=%s", still, configDigestAnnotation, digest)
	}

	changeConfigMap(t, ns, "shared", "two")
	for _, name := range rolling {
		old := before[name].Spec.Template.Annotations[configDigestAnnotation]
		waitForDeployment(t, ns, name, "has a new config digest", func(d *appsv1.Deployment) bool {
			digest := d.Spec.Template.Annotations[configDigestAnnotation]
			return digest != "" && digest != old && d.Status.ObservedGeneration == d.Generation
		})
		robot := waitForRobotReady(t, ns, name)
		if synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced); synced == nil || synced.Status != metav1.ConditionTrue {
			t.Errorf("Robot %s after the change: %s", name, summarizeRobot(robot))
		}
	}
	// The two rolled: the third had as long to follow, and must not have.
	after := getDeployment(t, ns, still)
	if after.Generation != before[still].Generation || after.ResourceVersion != before[still].ResourceVersion {
		t.Errorf("the Deployment of %s, which does not roll on config changes, changed: generation %d → %d, annotations %v",
			still, before[still].Generation, after.Generation, after.Spec.Template.Annotations)
	}
}

// TestConfigSecretNotWatched: the shared operator runs with the shipped RBAC,
// which does not let it list Secrets. A Robot that rolls on config changes
// and reads a Secret says so (Synced=False, ConfigNotWatched, naming the
// Secret) while it runs and is Ready, and its ConfigMap still rolls it.
func TestConfigSecretNotWatched(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	if _, err := env.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"setting": "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, StringData: map[string]string{"password": "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createRobot(t, configRobot(ns, "web", "settings", "db", ptr.To(true)))
	robot := waitForRobot(t, ns, "web", convergeTimeout, "is Ready, and Synced says ConfigNotWatched", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return robotConverged(r) && synced != nil && synced.Status == metav1.ConditionFalse &&
			synced.Reason == robotv1beta1.ReasonConfigNotWatched && synced.ObservedGeneration == r.Generation
	})
	synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced)
	if !strings.Contains(synced.Message, "Secrets db") {
		t.Errorf("Synced's message %q does not name the Secret db", synced.Message)
	}
	waitForEvents(t, ns, robot.UID, robotv1beta1.ReasonConfigNotWatched, 1)

	before := getDeployment(t, ns, "web").Spec.Template.Annotations[configDigestAnnotation]
	if before == "" {
		t.Fatalf("the pod template has no %s: the ConfigMap is watched, and counts", configDigestAnnotation)
	}
	changeConfigMap(t, ns, "settings", "two")
	waitForDeployment(t, ns, "web", "has a new config digest", func(d *appsv1.Deployment) bool {
		digest := d.Spec.Template.Annotations[configDigestAnnotation]
		return digest != "" && digest != before
	})
	eventually(t, convergeTimeout, "the Robot is Ready again, and still says ConfigNotWatched", func(ctx context.Context) (bool, string, error) {
		r, err := env.robots.RobotV1beta1().Robots(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return robotConverged(r) && synced != nil && synced.Reason == robotv1beta1.ReasonConfigNotWatched, summarizeRobot(r), nil
	})
}
