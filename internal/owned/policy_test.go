package owned

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// policyFixture is the paths of every kind, over a fake API server and
// caches that the test fills, with the Gateway API there. The
// PodDisruptionBudget is left out (sources.Without) unless a test takes it
// out of that list; budgets is its cache. The history is left out unless a
// test takes it out of the list (withHistory).
type policyFixture struct {
	*pathFixture
	gateway                             *gatewayfake.Clientset
	deployments, services, budgets, hrs cache.Indexer
	sources                             Sources
}

func newPolicyFixture(t *testing.T, robot *robotv1beta1.Robot) *policyFixture {
	f := &policyFixture{pathFixture: newPathFixture(t, robot), gateway: gatewayfake.NewClientset()}
	kube := informers.NewSharedInformerFactory(f.kube, 0)
	gateway := gatewayinformers.NewSharedInformerFactory(f.gateway, 0)
	f.sources = Sources{Kube: f.kube, KubeInformers: kube, Gateway: f.gateway, GatewayInformers: gateway, APIs: &APIs{},
		Without: []string{"PodDisruptionBudget", historyKindName}}
	f.sources.APIs.Found(RoutesCRD).SetAvailable(true)
	f.deployments = kube.Apps().V1().Deployments().Informer().GetIndexer()
	f.services = kube.Core().V1().Services().Informer().GetIndexer()
	f.budgets = kube.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer()
	f.hrs = gateway.Gateway().V1().HTTPRoutes().Informer().GetIndexer()
	return f
}

// paths returns the paths of every kind under allowed.
func (f *policyFixture) paths(t *testing.T, allowed policy.Policy) *Paths {
	t.Helper()
	sources := f.sources
	sources.Policy = allowed
	paths, err := NewPaths(f.deps, sources)
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// writes returns the writes both API servers got, as "verb resource".
func (f *policyFixture) writes() []string {
	writes := f.pathFixture.writes()
	for _, action := range f.gateway.Actions() {
		if verb := action.GetVerb(); verb != "get" && verb != "list" && verb != "watch" {
			writes = append(writes, verb+" "+action.GetResource().Resource)
		}
	}
	f.gateway.ClearActions()
	return writes
}

// cache puts what a sync returned into the caches, as the informers would.
func (f *policyFixture) cache(t *testing.T, objects Objects) {
	t.Helper()
	add := func(indexer cache.Indexer, object any) {
		if err := indexer.Add(object); err != nil {
			t.Fatal(err)
		}
	}
	if objects.Deployment != nil {
		add(f.deployments, objects.Deployment)
	}
	if objects.Service != nil {
		add(f.services, objects.Service)
	}
	if objects.Route() != nil {
		add(f.hrs, objects.Route())
	}
}

// refusedFor fails unless err is the policy's refusal with reason.
func refusedFor(t *testing.T, err error, reason string) {
	t.Helper()
	var refused *outcome.NotAllowedError
	if !errors.As(err, &refused) || refused.Reason != reason {
		t.Fatalf("sync: %v, want a refusal with reason %s", err, reason)
	}
}

// policyRobot is a Robot with a ClusterIP Service and a route.
func policyRobot() *robotv1beta1.Robot {
	robot := robottest.NewServiceRobot("shop", robotv1beta1.ServiceTypeClusterIP)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public", Namespace: "infra"}},
		Hostnames: []string{"shop.example.com"}}
	return robot
}

// TestRoutesOff: with routes off, a Robot that asks for a route gets none,
// and says why; a route it has is left as it was, not changed to what the
// Robot asks for now; and it still goes with the Robot's spec.http.
func TestRoutesOff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	f := newPolicyFixture(t, robot)
	off := policy.Policy{Routes: policy.Routes{Off: true}}

	objects, err := f.paths(t, off).Sync(ctx, robot)
	refusedFor(t, err, robotv1beta1.ReasonRouteNotAllowed)
	if got := fmt.Sprint(f.writes()); got != "[create deployments create services]" {
		t.Errorf("writes %s, want the Deployment and the Service and no route", got)
	}
	if objects.Route() != nil {
		t.Errorf("route %v, want none", objects.Route())
	}
	f.cache(t, objects)

	// A route made while routes were on.
	objects, err = f.paths(t, policy.Policy{}).Sync(ctx, robot)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(f.writes()); got != "[create httproutes]" {
		t.Fatalf("writes %s with routes on, want the route created", got)
	}
	f.cache(t, objects)
	made := objects.Route()

	robot.Spec.HTTP.Hostnames = []string{"login.victim.example.com"}
	objects, err = f.paths(t, off).Sync(ctx, robot)
	refusedFor(t, err, robotv1beta1.ReasonRouteNotAllowed)
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("writes %v with routes off, want the route left as it is", writes)
	}
	if objects.Route() == nil || objects.Route().UID != made.UID || fmt.Sprint(objects.Route().Spec.Hostnames) != "[shop.example.com]" {
		t.Errorf("route %v, want the one made before, as it was", objects.Route())
	}

	robot.Spec.HTTP = nil
	if _, err := f.paths(t, off).Sync(ctx, robot); err != nil {
		t.Fatalf("a Robot without spec.http, routes off: %v", err)
	}
	if got := fmt.Sprint(f.writes()); got != "[delete httproutes]" {
		t.Errorf("writes %s once the Robot asks for no route, want its route deleted", got)
	}
}

// TestRouteOutsideTheAllowlists: a Gateway or a hostname outside the
// allowlists gets no route written.
func TestRouteOutsideTheAllowlists(t *testing.T) {
	for name, allowed := range map[string]policy.Policy{
		"gateway":  {Routes: policy.Routes{Gateways: []string{"infra/internal"}}},
		"hostname": {Routes: policy.Routes{Hostnames: map[string][]string{"default": {"*.default.example.com"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := policyRobot()
			f := newPolicyFixture(t, robot)
			_, err := f.paths(t, allowed).Sync(ctx, robot)
			refusedFor(t, err, robotv1beta1.ReasonRouteNotAllowed)
			if !strings.Contains(err.Error(), name) {
				t.Errorf("message %q, want it to name the %s", err, name)
			}
			if got := fmt.Sprint(f.writes()); got != "[create deployments create services]" {
				t.Errorf("writes %s, want no route", got)
			}
		})
	}
}

// TestExposingServiceMetadataRefused: an annotation that exposes the
// Service gets no Service written; a Service the Robot has keeps what it
// has, its address included, when the Robot asks for one.
func TestExposingServiceMetadataRefused(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	robot.Spec.HTTP = nil
	robot.Spec.Service.Annotations = map[string]string{"tailscale.com/expose": "true"}
	f := newPolicyFixture(t, robot)
	star := policy.Policy{ServiceMetadata: policy.ServiceMetadata{Annotations: []string{"*"}, Labels: []string{"*"}}}

	objects, err := f.paths(t, star).Sync(ctx, robot)
	refusedFor(t, err, robotv1beta1.ReasonServiceMetadataNotAllowed)
	if got := fmt.Sprint(f.writes()); got != "[create deployments]" {
		t.Errorf("writes %s, want the Deployment and no Service", got)
	}
	if objects.Service != nil || objects.Deployment == nil {
		t.Errorf("objects %+v, want the Deployment and no Service", objects)
	}

	// A Service made before, with the annotation allowed.
	robot.Spec.Service.Annotations = map[string]string{"prometheus.io/scrape": "true"}
	objects, err = f.paths(t, star).Sync(ctx, robot)
	if err != nil {
		t.Fatal(err)
	}
	objects.Service.Spec.ClusterIP = "10.0.0.7"
	f.cache(t, objects)
	f.writes()
	made := objects.Service

	robot.Spec.Service.Annotations = map[string]string{"prometheus.io/scrape": "true", "external-dns.alpha.kubernetes.io/hostname": "login.victim.example.com"}
	robot.Spec.Service.Labels = map[string]string{"mirror.linkerd.io/exported": "true"}
	objects, err = f.paths(t, star).Sync(ctx, robot)
	refusedFor(t, err, robotv1beta1.ReasonServiceMetadataNotAllowed)
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("writes %v, want the Service left as it is", writes)
	}
	if objects.Service == nil || objects.Service.UID != made.UID || objects.Service.Spec.ClusterIP != "10.0.0.7" {
		t.Errorf("Service %v, want the one made before, with its address", objects.Service)
	}
}

// TestLoadBalancerClassRefused: a class outside the allowlist gets no
// Service written.
func TestLoadBalancerClassRefused(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	robot.Spec.HTTP = nil
	robot.Spec.Service = &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeLoadBalancer, LoadBalancerClass: "tailscale"}
	f := newPolicyFixture(t, robot)
	_, err := f.paths(t, policy.Policy{ServiceMetadata: policy.ServiceMetadata{LoadBalancerClasses: []string{"example.com/internal-lb"}}}).Sync(ctx, robot)
	refusedFor(t, err, robotv1beta1.ReasonLoadBalancerClassNotAllowed)
	if got := fmt.Sprint(f.writes()); got != "[create deployments]" {
		t.Errorf("writes %s, want no Service", got)
	}
}

// TestGracePeriodRefused: a grace period above the maximum gets no
// Deployment written, nor anything beside it; a Deployment the Robot has
// is left as it is.
func TestGracePeriodRefused(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	robot.Spec.HTTP = nil
	day, hour := int64(86400), policy.Policy{Shutdown: policy.Shutdown{MaxGracePeriod: time.Hour}}
	robot.Spec.TerminationGracePeriodSeconds = &day
	robot.Spec.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: day - 1}}
	f := newPolicyFixture(t, robot)

	_, err := f.paths(t, hour).Sync(ctx, robot)
	refusedFor(t, err, robotv1beta1.ReasonGracePeriodNotAllowed)
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("writes %v, want none", writes)
	}

	thirty := int64(30)
	robot.Spec.TerminationGracePeriodSeconds, robot.Spec.PreStop = &thirty, nil
	objects, err := f.paths(t, hour).Sync(ctx, robot)
	if err != nil {
		t.Fatal(err)
	}
	f.cache(t, objects)
	f.writes()

	robot.Spec.TerminationGracePeriodSeconds = &day
	robot.Spec.Image = "registry.example/robot:2.0"
	objects, err = f.paths(t, hour).Sync(ctx, robot)
	refusedFor(t, err, robotv1beta1.ReasonGracePeriodNotAllowed)
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("writes %v, want the Deployment left as it is", writes)
	}
	if got := objects.Deployment.Spec.Template.Spec.TerminationGracePeriodSeconds; got == nil || *got != 30 {
		t.Errorf("Deployment's grace period %v, want the 30 s it had", got)
	}
}
