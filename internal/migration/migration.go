package migration

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotclient "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/typed/robot/v1beta1"
)

// pageSize is how many Robots one list returns: the migration reads them
// from the API server in pages, not all at once.
const pageSize = 500

// Migrator rewrites Robots in the storage version.
type Migrator struct {
	Robots  robotclient.RobotsGetter // every namespace's
	CRDs    apiextensionsclient.CustomResourceDefinitionInterface
	CRDName string
}

// Run migrates, if the CRD's storedVersions lists a version other than the
// storage version: it writes every Robot again with an empty patch (the API
// server stores it in the storage version, and skips the write of one
// already stored so), then sets storedVersions to the storage version
// alone. It returns how many Robots it patched.
func (m *Migrator) Run(ctx context.Context) (int, error) {
	logger := klog.FromContext(ctx)
	storage := robotv1beta1.SchemeGroupVersion.Version
	crd, err := m.CRDs.Get(ctx, m.CRDName, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("reading CRD %s: %w", m.CRDName, err)
	}
	if !needsMigration(crd, storage) {
		return 0, nil
	}
	if stored := storageVersionOf(crd); stored != storage {
		return 0, fmt.Errorf("CRD %s stores %q, and this operator %q: install the CRD of this release", m.CRDName, stored, storage)
	}
	logger.Info("Rewriting the Robots in the storage version", "crd", m.CRDName, "storedVersions", crd.Status.StoredVersions, "storageVersion", storage)
	patched := 0
	options := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := m.Robots.Robots(metav1.NamespaceAll).List(ctx, options)
		if err != nil {
			return patched, fmt.Errorf("listing Robots to rewrite them in %s: %w", storage, err)
		}
		for _, robot := range list.Items {
			_, err := m.Robots.Robots(robot.Namespace).Patch(ctx, robot.Name, types.MergePatchType, []byte("{}"), metav1.PatchOptions{FieldManager: "robot-operator-migration"})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return patched, fmt.Errorf("rewriting Robot %s/%s in %s: %w", robot.Namespace, robot.Name, storage, err)
			default:
				patched++
			}
		}
		if list.Continue == "" {
			break
		}
		options.Continue = list.Continue
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := m.CRDs.Get(ctx, m.CRDName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !needsMigration(crd, storage) {
			return nil
		}
		crd = crd.DeepCopy()
		crd.Status.StoredVersions = []string{storage}
		_, err = m.CRDs.UpdateStatus(ctx, crd, metav1.UpdateOptions{FieldManager: "robot-operator-migration"})
		return err
	})
	if err != nil {
		return patched, fmt.Errorf("setting CRD %s's storedVersions to [%s]: %w", m.CRDName, storage, err)
	}
	logger.Info("Rewrote the Robots in the storage version", "crd", m.CRDName, "robots", patched, "storedVersions", []string{storage})
	return patched, nil
}

// needsMigration reports whether the CRD's storedVersions lists a version
// other than storage.
func needsMigration(crd *apiextensionsv1.CustomResourceDefinition, storage string) bool {
	return slices.ContainsFunc(crd.Status.StoredVersions, func(v string) bool { return v != storage })
}

// storageVersionOf returns the name of the CRD's storage version.
func storageVersionOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}
