package owned

import (
	"context"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/fleet"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/preflight"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The reasons of the Events that announce the writes of a Robot's
// Deployment.
const (
	// EventDeploymentUpdated: the operator changed a Robot's Deployment to
	// match the Robot, after the Robot changed or someone changed the
	// Deployment.
	EventDeploymentUpdated = "DeploymentUpdated"
)

// DeploymentPath is the path of a Robot's Deployment.
type DeploymentPath = Path[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration]

// Deployments returns the path of the Deployment that runs a Robot's pods,
// cached by informer (which should hold only the Deployments the operator
// manages) and written through kube. A Robot whose pods' shutdown the
// policy refuses gets no Deployment written, and one it has is left as it
// is: its pods keep running. The pod template of a Robot rolling on config
// changes carries the digest of the config its pods read, from config
// (nil: none). A change of the Deployment that does not come from a Robot's
// spec rolls under budget (nil: no limit). A Robot's change of its pods'
// template is then checked by check (nil: not checked), and not written if
// the cluster would refuse it.
func Deployments(deps Deps, informer appsinformers.DeploymentInformer, kube kubernetes.Interface, allowed policy.Policy, config *Config, check *preflight.Checker, budget *fleet.Budget) (*DeploymentPath, error) {
	lister := informer.Lister()
	kind := Kind[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration]{
		Name: "Deployment",
		Client: func(namespace string) writer.Client[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration] {
			return kube.AppsV1().Deployments(namespace)
		},
		Updated: EventDeploymentUpdated,
		Drift: func(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment, specsMatch bool) string {
			return drift.DeploymentDriftSkippingSpecs(workload.Unstamped(desired), current, specsMatch)
		},
		Generation:   true,
		PodTemplate:  drift.PodTemplateDrift,
		PrepareApply: prepareDeploymentApply,
		Meta: func(desired *appsv1ac.DeploymentApplyConfiguration) *metav1ac.ObjectMetaApplyConfiguration {
			return desired.ObjectMetaApplyConfiguration
		},
		Hold:       allowed.CheckShutdown,
		ObjectName: workload.DeploymentName,
		Desired:    config.desiredDeployment,
		Admit:      admitDeployment(budget),
		Cached: func(namespace, name string) (*appsv1.Deployment, error) {
			return lister.Deployments(namespace).Get(name)
		},
		Reported: func(robot *robotv1beta1.Robot) bool {
			return meta.IsStatusConditionTrue(robot.Status.Conditions, robotv1beta1.ConditionSynced)
		},
		NameTaken:     robotv1beta1.ReasonDeploymentNameTaken,
		NameTakenHint: outcome.DeploymentNameTakenHint,
		Contested:     robotv1beta1.ReasonDeploymentContested,
		Reports:       true,
	}
	if check != nil {
		// A nil *preflight.Checker would be a Preflight all the same.
		kind.Preflight = check
	}
	return New(deps, kind, informer.Informer())
}

// listDeployments is the Deployment's entry in the list of kinds.
func listDeployments(p *Paths, sources Sources) (ownedKind, error) {
	informer := sources.KubeInformers.Apps().V1().Deployments()
	p.preflight = preflight.New(sources.PreflightClient, sources.Policy.Preflight, sources.PreflightCount).Fenced(p.deps.Writer.MayWrite)
	path, err := Deployments(p.deps, informer, sources.Kube, sources.Policy, p.config, p.preflight, sources.Fleet)
	p.Deployments, p.deploymentList = path, informer.Lister()
	return listed(p, sources, path, err, informer.Informer(), "written_deployments")
}

// admitDeployment returns the Deployment's Admit: a change of the Robot's
// spec goes through at once, with whatever else changed; another change of
// what the operator applies (a new default of its release) waits for a
// slot of budget, and is marked as budgeted when it goes.
func admitDeployment(budget *fleet.Budget) func(*robotv1beta1.Robot, *appsv1ac.DeploymentApplyConfiguration, *appsv1.Deployment) (*appsv1ac.DeploymentApplyConfiguration, error) {
	return func(robot *robotv1beta1.Robot, desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) (*appsv1ac.DeploymentApplyConfiguration, error) {
		if budget.Limit() == 0 {
			return desired, nil
		}
		if fleet.FromSpec(robot, current) {
			budget.Bypass(robot.UID)
			return desired, nil
		}
		err := budget.Admit(fleet.Robot{UID: robot.UID, Namespace: robot.Namespace, Name: robot.Name})
		if err == nil {
			return workload.MarkBudgeted(desired), nil
		}
		// Said once: the status keeps the message it was first given.
		message, waiting := fleet.Waiting(robot)
		if !waiting {
			message = err.Error()
		}
		return desired, &outcome.FleetBudgetError{Message: message}
	}
}

// prepareDeploymentApply sends the patches that must come before the apply
// of desired onto current, and returns the Deployment as it then is.
//
// The first makes the fields that the operator's create set owned by its
// applies, when the apply may drop one of them. It may only if the Robot
// asks for something else than at the create, which the spec hash tells.
// Until then the create's entry stays, so that undoing another writer's
// change takes one write, not two. Once the Robot changed, the entry becomes
// the operator's Apply entry; or, if an apply has recorded that entry since
// the create, it goes: that apply set every field the create set, the Robot
// asking for the same then.
//
// The second removes the rollingUpdate that an apply of a Recreate strategy
// cannot (writer.RecreatePatch). As for the first, a failed test (422) is an
// ordinary failure, retried with backoff, not an invalid spec.
func prepareDeploymentApply(ctx context.Context, deployments *writer.Objects[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration],
	desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) (*appsv1.Deployment, error) {
	if current.Annotations[workload.AnnotationSpecHash] != desired.Annotations[workload.AnnotationSpecHash] {
		claimed, err := deployments.ClaimCreated(ctx, current)
		if err != nil {
			return claimed, err
		}
		current = claimed
	}
	data, err := writer.RecreatePatch(desired, current)
	if err != nil || data == nil {
		return current, err
	}
	patched, err := deployments.Patch(ctx, current, data)
	if err != nil {
		return current, fmt.Errorf("removing the rollingUpdate of Deployment %s/%s before its strategy becomes Recreate: %w", current.Namespace, current.Name, err)
	}
	klog.FromContext(ctx).V(4).Info("Removed the rollingUpdate before applying Recreate", "deployment", klog.KObj(patched))
	return patched, nil
}
