package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robot-operator/robot-operator/internal/conversion"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/robot-operator/robot-operator/pkg/apis/robot"
)

// checkStorageVersion refuses to start against a Robot CRD that stores a
// version this release does not serve: a newer release installed it, and
// this one, rolled back to, would fail every read of a Robot through its
// own conversion webhook. A replica that may not read the CRD says so and
// starts: the webhook's upkeep, which needs the same right, reports it again.
func checkStorageVersion(ctx context.Context, cfg *rest.Config, version string) error {
	probe := rest.CopyConfig(cfg)
	probe.Timeout = 15 * time.Second
	client, err := apiextensionsclient.NewForConfig(probe)
	if err != nil {
		return fmt.Errorf("building the CRD client: %w", err)
	}
	crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, robotsCRD, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		klog.FromContext(ctx).Error(err, "Cannot check which version the Robot CRD stores", "crd", robotsCRD)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the Robot CRD %s: %w", robotsCRD, err)
	}
	if err := storageVersionError(crd, version); err != nil {
		return err
	}
	if unknown := unknownServedVersions(crd); len(unknown) > 0 {
		klog.FromContext(ctx).Error(nil, "The Robot CRD serves versions this release cannot convert: reading Robots through them fails",
			"crd", robotsCRD, "versions", unknown, "known", conversion.Versions)
	}
	return nil
}

// storageVersionError says, in one line, why this release (version) cannot
// run against crd: it stores a version the release does not serve. Nil when
// it can.
func storageVersionError(crd *apiextensionsv1.CustomResourceDefinition, version string) error {
	storage := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	if storage == "" {
		return errors.New("the Robot CRD " + crd.Name + " has no storage version: install the CRD of this release (kubectl apply -f artifacts/crd/)")
	}
	if slices.Contains(conversion.Versions, storage) {
		return nil
	}
	return fmt.Errorf("the Robot CRD %s stores %s/%s, which this release of the operator (%s) does not serve (it serves %s): "+
		"a newer release installed it; run that release or a later one, and see docs/operating.md, Rolling back",
		crd.Name, robot.GroupName, storage, version, strings.Join(conversion.Versions, ", "))
}

// unknownServedVersions returns the versions crd serves that this release
// cannot convert.
func unknownServedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var unknown []string
	for _, v := range crd.Spec.Versions {
		if v.Served && !slices.Contains(conversion.Versions, v.Name) {
			unknown = append(unknown, v.Name)
		}
	}
	return unknown
}
