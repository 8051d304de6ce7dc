package writer

import (
	"context"
	"errors"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// TestReplaced: only the API server's refusal of an apply for naming
// another object's UID counts as the object replaced; any other refusal is
// what it is.
func TestReplaced(t *testing.T) {
	kind := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the UID refused", apierrors.NewInvalid(kind, "web", field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "b0a9", "field is immutable")}), true},
		{"another field refused", apierrors.NewInvalid(kind, "web", field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), -1, "must be positive")}), false},
		{"a conflict", apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("modified")), false},
		{"no error", nil, false},
	} {
		if got := replaced(tc.err); got != tc.want {
			t.Errorf("%s: replaced = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCreateServiceSendsWhatTheRobotSets: the create of a Robot's Service
// carries every annotation, label and traffic field of the apply
// configuration: some clouds read their load balancer's annotations only
// when it is created, and a later apply would be too late for them.
func TestCreateServiceSendsWhatTheRobotSets(t *testing.T) {
	robot := robottest.LoadBalancerRobot()
	desired := workload.NewService(robot)
	kube := fake.NewClientset()
	services := NewObjects(New(nil, record.NewFakeRecorder(10), nil), Kind[*corev1.Service, *corev1ac.ServiceApplyConfiguration]{
		Name: "Service",
		Client: func(namespace string) Client[*corev1.Service, *corev1ac.ServiceApplyConfiguration] {
			return kube.CoreV1().Services(namespace)
		},
		SpecHash: func(d *corev1ac.ServiceApplyConfiguration) string { return d.Annotations[workload.AnnotationSpecHash] },
	})
	if _, err := services.Create(context.Background(), robot, desired); err != nil {
		t.Fatal(err)
	}
	actions := kube.Actions()
	if len(actions) != 1 || actions[0].GetVerb() != "create" {
		t.Fatalf("requests %v, want one create", actions)
	}
	sent := actions[0].(core.CreateAction).GetObject().(*corev1.Service)
	var want corev1.Service
	if err := workload.RoundTrip(desired, &want); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(&want, sent) {
		t.Errorf("the create sent something else than the apply configuration (-want +sent):\n%s", diff.Diff(&want, sent))
	}
	for key, value := range robot.Spec.Service.Annotations {
		if sent.Annotations[key] != value {
			t.Errorf("annotation %s is %q in the create, want %q", key, sent.Annotations[key], value)
		}
	}
	if sent.Spec.LoadBalancerClass == nil || *sent.Spec.LoadBalancerClass != robot.Spec.Service.LoadBalancerClass {
		t.Errorf("loadBalancerClass %v in the create, want %q", sent.Spec.LoadBalancerClass, robot.Spec.Service.LoadBalancerClass)
	}
}
