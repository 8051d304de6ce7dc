package owned

import (
	"context"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The reasons of the Events that announce the writes of a Robot's Service.
const (
	// EventServiceUpdated: the operator changed a Robot's Service to match
	// the Robot.
	EventServiceUpdated = "ServiceUpdated"
	// EventServiceDeleted: the operator deleted a Robot's Service, which
	// the Robot no longer asks for.
	EventServiceDeleted = "ServiceDeleted"
)

// ServicePath is the path of a Robot's Service.
type ServicePath = Path[*corev1.Service, *corev1ac.ServiceApplyConfiguration]

// Services returns the path of the Service that reaches a Robot's pods on
// its ports, cached by informer (which should hold only the Services the
// operator manages) and written through kube. When the policy limits the
// Service types, annotations, labels or load balancer classes, a Robot that
// asks for another gets no Service written, and a Service it has stays as
// it is (its type, its metadata, its address): deleting it would cut off
// whoever uses it.
func Services(deps Deps, informer coreinformers.ServiceInformer, kube kubernetes.Interface, allowed policy.Policy) (*ServicePath, error) {
	lister := informer.Lister()
	return New(deps, Kind[*corev1.Service, *corev1ac.ServiceApplyConfiguration]{
		Name: "Service",
		Client: func(namespace string) writer.Client[*corev1.Service, *corev1ac.ServiceApplyConfiguration] {
			return kube.CoreV1().Services(namespace)
		},
		Updated:      EventServiceUpdated,
		Deleted:      EventServiceDeleted,
		PrepareApply: claimCreatedServiceFields,
		Meta: func(desired *corev1ac.ServiceApplyConfiguration) *metav1ac.ObjectMetaApplyConfiguration {
			return desired.ObjectMetaApplyConfiguration
		},
		// A Service's generation does not change with its spec: its few
		// fields are compared on every sync.
		SpecDrift: drift.ServiceSpecDrift,
		Wants:     workload.WantsService,
		Hold: func(robot *robotv1beta1.Robot) error {
			if err := workload.ValidateServiceName(robot); err != nil {
				return err
			}
			if want := workload.ServiceType(robot); workload.WantsService(robot) && !allowed.AllowsServiceType(want) {
				return &outcome.ServiceTypeNotAllowedError{Type: want, Allowed: allowed.ServiceTypes}
			}
			if workload.WantsService(robot) {
				return allowed.CheckServiceMetadata(robot)
			}
			return nil
		},
		ObjectName: workload.ServiceName,
		Desired: func(robot *robotv1beta1.Robot) (*corev1ac.ServiceApplyConfiguration, error) {
			return workload.NewService(robot), nil
		},
		Cached: func(namespace, name string) (*corev1.Service, error) {
			return lister.Services(namespace).Get(name)
		},
		Reported: func(robot *robotv1beta1.Robot) bool {
			return robot.Status.ServiceName != "" && robot.Status.ServiceName == workload.ServiceName(robot)
		},
		NameTaken:     robotv1beta1.ReasonServiceNameTaken,
		NameTakenHint: "set spec.service.type to None, or recreate the Robot with another spec.deploymentName",
		// A change of loadBalancerClass, which the API server refuses on a
		// Service, is reported, not sent: once the Robot's status says the
		// API server refused it, not even a class the operator set and the
		// Robot dropped.
		Refuse: func(robot *robotv1beta1.Robot, desired *corev1ac.ServiceApplyConfiguration, current *corev1.Service) error {
			return drift.LoadBalancerClassChange(desired, current, status.ReportsLoadBalancerClassImmutable(robot.Status, robot.Generation))
		},
		Refused: drift.LoadBalancerClassRefused,
		// A node port out of the cluster's range, or another Service's,
		// only the API server can refuse: it says which port of the
		// Robot asked for it.
		Explain:   drift.NodePortRefused,
		Contested: robotv1beta1.ReasonServiceContested,
	}, informer.Informer())
}

// listServices is the Service's entry in the list of kinds.
func listServices(p *Paths, sources Sources) (ownedKind, error) {
	informer := sources.KubeInformers.Core().V1().Services()
	path, err := Services(p.deps, informer, sources.Kube, sources.Policy)
	p.Services = path
	return listed(p, sources, path, err, informer.Informer(), "written_services")
}

// claimCreatedServiceFields makes the fields that the operator's create of
// current set owned by its applies, before the first apply. Unlike a
// Deployment's, a Service's fields are few and always all set, so there is
// no reason to wait for the Robot to change: the first apply, whatever its
// cause, may drop what the create set (the old port when the port changes,
// the externalTrafficPolicy the API server defaulted for a NodePort when the
// type goes back to ClusterIP), and that costs one patch, once per Service.
func claimCreatedServiceFields(ctx context.Context, services *writer.Objects[*corev1.Service, *corev1ac.ServiceApplyConfiguration],
	_ *corev1ac.ServiceApplyConfiguration, current *corev1.Service) (*corev1.Service, error) {
	return services.ClaimCreated(ctx, current)
}
