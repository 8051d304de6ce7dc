package app

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/owned"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
)

// TestGatewayAPIFirstAnswer: whether the HTTPRoute CRD is there or not,
// watchOptionalAPI answers once the CRD's cache has synced, with no event
// needed: a cluster without the Gateway API gets a definite "not there",
// and no Robot waits for an answer that would never come. An operator that
// may not read the CRD, or the HTTPRoutes (its RBAC lacks the rule),
// answers "not there" too, rather than never start its workers.
func TestGatewayAPIFirstAnswer(t *testing.T) {
	established := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: owned.RoutesCRD},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true}}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}},
	}
	forbidden := apiextensionsfake.NewClientset(established)
	forbidden.PrependReactor("list", "customresourcedefinitions", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, owned.RoutesCRD, errors.New("no rule"))
	})
	routesForbidden := gatewayfake.NewClientset()
	routesForbidden.PrependReactor("list", "httproutes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "gateway.networking.k8s.io", Resource: "httproutes"}, "", errors.New("no rule"))
	})
	for _, tc := range []struct {
		name    string
		crds    *apiextensionsfake.Clientset
		gateway *gatewayfake.Clientset
		want    bool
	}{
		{"not installed", apiextensionsfake.NewClientset(), gatewayfake.NewClientset(), false},
		{"installed", apiextensionsfake.NewClientset(established), gatewayfake.NewClientset(), true},
		{"CRD not readable", forbidden, gatewayfake.NewClientset(), false},
		{"routes not readable", apiextensionsfake.NewClientset(established), routesForbidden, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			routes := gatewayinformers.NewSharedInformerFactory(tc.gateway, 0)
			found := &owned.Discovery{}
			api := owned.OptionalAPI{Optional: owned.Optional{CRD: owned.RoutesCRD, Version: "v1", Found: found}, Kind: "HTTPRoute",
				Informer: routes.Gateway().V1().HTTPRoutes().Informer()}
			var done sync.WaitGroup
			done.Go(func() { watchOptionalAPI(ctx, tc.crds, api) })
			defer func() {
				cancel()
				done.Wait()
			}()
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return found.Answered(), nil
			}); err != nil {
				t.Fatalf("no answer whether the Gateway API is there: %v", err)
			}
			if found.Available() != tc.want {
				t.Errorf("Gateway API there: %v, want %v", found.Available(), tc.want)
			}
		})
	}
}
