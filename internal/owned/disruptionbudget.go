package owned

import (
	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	policyv1 "k8s.io/api/policy/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The reasons of the Events that announce the writes of a Robot's
// PodDisruptionBudget.
const (
	// EventDisruptionBudgetUpdated: the operator changed a Robot's
	// PodDisruptionBudget to match the Robot.
	EventDisruptionBudgetUpdated = "DisruptionBudgetUpdated"
	// EventDisruptionBudgetDeleted: the operator deleted a Robot's
	// PodDisruptionBudget, which the Robot no longer asks for.
	EventDisruptionBudgetDeleted = "DisruptionBudgetDeleted"
)

// DisruptionBudgetPath is the path of a Robot's PodDisruptionBudget.
type DisruptionBudgetPath = Path[*policyv1.PodDisruptionBudget, *policyv1ac.PodDisruptionBudgetApplyConfiguration]

// DisruptionBudgets returns the path of the PodDisruptionBudget that keeps
// a drain from taking a Robot's pods down all at once, cached by informer
// (which should hold only the budgets the operator manages) and written
// through kube. Which Robots get one is the policy's to say: a budget the
// operator made for a Robot that no longer gets one is deleted. A budget
// annotated robot.dev/disruption-budget: unmanaged is left as it is.
func DisruptionBudgets(deps Deps, informer policyinformers.PodDisruptionBudgetInformer, kube kubernetes.Interface, allowed policy.Policy) (*DisruptionBudgetPath, error) {
	lister := informer.Lister()
	return New(deps, Kind[*policyv1.PodDisruptionBudget, *policyv1ac.PodDisruptionBudgetApplyConfiguration]{
		Name: "PodDisruptionBudget",
		Client: func(namespace string) writer.Client[*policyv1.PodDisruptionBudget, *policyv1ac.PodDisruptionBudgetApplyConfiguration] {
			return kube.PolicyV1().PodDisruptionBudgets(namespace)
		},
		Updated: EventDisruptionBudgetUpdated,
		Deleted: EventDisruptionBudgetDeleted,
		Meta: func(desired *policyv1ac.PodDisruptionBudgetApplyConfiguration) *metav1ac.ObjectMetaApplyConfiguration {
			return desired.ObjectMetaApplyConfiguration
		},
		// Its generation follows its spec, but its few fields cost little
		// to compare.
		SpecDrift:  drift.DisruptionBudgetSpecDrift,
		Wants:      allowed.WantsDisruptionBudget,
		ObjectName: workload.DisruptionBudgetName,
		Desired: func(robot *robotv1beta1.Robot) (*policyv1ac.PodDisruptionBudgetApplyConfiguration, error) {
			return workload.NewDisruptionBudget(robot), nil
		},
		Cached: func(namespace, name string) (*policyv1.PodDisruptionBudget, error) {
			return lister.PodDisruptionBudgets(namespace).Get(name)
		},
		NameTaken:     robotv1beta1.ReasonDisruptionBudgetNameTaken,
		NameTakenHint: "or set spec.disruptionBudget.disabled",
		// An administrator who loosens the budget that holds a node's
		// drain must not have it put back.
		Released:  workload.DisruptionBudgetReleased,
		Contested: robotv1beta1.ReasonDisruptionBudgetContested,
		// A Robot the policy refuses a budget is told so after the path
		// ran, so that the budget the operator made is deleted all the
		// same.
		Denied: allowed.RefusesDisruptionBudget,
	}, informer.Informer())
}

// listDisruptionBudgets is the budget's entry in the list of kinds.
func listDisruptionBudgets(p *Paths, sources Sources) (ownedKind, error) {
	informer := sources.KubeInformers.Policy().V1().PodDisruptionBudgets()
	path, err := DisruptionBudgets(p.deps, informer, sources.Kube, sources.Policy)
	return listed(p, sources, path, err, informer.Informer(), "written_disruption_budgets")
}

// DisruptionBudget returns the Robot's PodDisruptionBudget: nil when it has
// none it controls.
func (o Objects) DisruptionBudget() *policyv1.PodDisruptionBudget {
	return objectOf[*policyv1.PodDisruptionBudget](o, "PodDisruptionBudget")
}
