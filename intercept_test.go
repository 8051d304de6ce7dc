package main

import (
	"context"
	"net/url"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
)

// interceptedWrites is a clientset whose creates and applies of the
// Deployment named name go through intercept, which sees each request's
// context (the fake clientset's reactors never do). intercept calls write to
// make the request as the API server would, or answers otherwise; url is
// the request's address, for the error client-go returns when a request's
// context ends.
type interceptedWrites struct {
	kubernetes.Interface
	name      string
	intercept func(ctx context.Context, op, url string, write func() (*appsv1.Deployment, error)) (*appsv1.Deployment, error)
}

// contextError is what client-go returns for a request whose context ended
// with err.
func contextError(op, address string, err error) error {
	return &url.Error{Op: op, URL: address, Err: err}
}

func (c *interceptedWrites) AppsV1() typedappsv1.AppsV1Interface {
	return interceptedApps{c.Interface.AppsV1(), c}
}

type interceptedApps struct {
	typedappsv1.AppsV1Interface
	c *interceptedWrites
}

func (a interceptedApps) Deployments(namespace string) typedappsv1.DeploymentInterface {
	return interceptedDeployments{a.AppsV1Interface.Deployments(namespace), a.c, namespace}
}

type interceptedDeployments struct {
	typedappsv1.DeploymentInterface
	c         *interceptedWrites
	namespace string
}

func (d interceptedDeployments) Create(ctx context.Context, deployment *appsv1.Deployment, opts metav1.CreateOptions) (*appsv1.Deployment, error) {
	write := func() (*appsv1.Deployment, error) { return d.DeploymentInterface.Create(ctx, deployment, opts) }
	if deployment.Name != d.c.name {
		return write()
	}
	return d.c.intercept(ctx, "Post", "https://api.example/apis/apps/v1/namespaces/"+d.namespace+"/deployments", write)
}

func (d interceptedDeployments) Apply(ctx context.Context, deployment *appsv1ac.DeploymentApplyConfiguration, opts metav1.ApplyOptions) (*appsv1.Deployment, error) {
	write := func() (*appsv1.Deployment, error) { return d.DeploymentInterface.Apply(ctx, deployment, opts) }
	if deployment.Name == nil || *deployment.Name != d.c.name {
		return write()
	}
	return d.c.intercept(ctx, "Patch", "https://api.example/apis/apps/v1/namespaces/"+d.namespace+"/deployments/"+d.c.name, write)
}
