package migration

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// ServeVersion sets whether the CRD serves version, and writes the CRD only
// when that changes it. The CRD's versions are one atomic list, which an
// apply would replace whole, so it is a JSON patch of the one field, with a
// test of the version's name at its index and of the CRD's resourceVersion:
// a CRD changed meanwhile makes the patch fail rather than land on another
// version. It refuses to stop serving the storage version, which the API
// server must serve. A version no longer served stays in the CRD, and in
// status.storedVersions while it is listed there: nothing is removed.
func (m *Migrator) ServeVersion(ctx context.Context, version string, served bool) (changed bool, err error) {
	crd, err := m.CRDs.Get(ctx, m.CRDName, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading CRD %s: %w", m.CRDName, err)
	}
	for i, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		if v.Served == served {
			return false, nil
		}
		if v.Storage && !served {
			return false, fmt.Errorf("CRD %s stores %s: it cannot stop serving it", m.CRDName, version)
		}
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/metadata/resourceVersion", "value": crd.ResourceVersion},
			{"op": "test", "path": fmt.Sprintf("/spec/versions/%d/name", i), "value": version},
			{"op": "replace", "path": fmt.Sprintf("/spec/versions/%d/served", i), "value": served},
		})
		if err != nil {
			return false, err
		}
		if _, err := m.CRDs.Patch(ctx, m.CRDName, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
			return false, fmt.Errorf("setting CRD %s's %s served to %t: %w", m.CRDName, version, served, err)
		}
		klog.FromContext(ctx).Info("Set whether the CRD serves a version", "crd", m.CRDName, "version", version, "served", served,
			"storedVersions", crd.Status.StoredVersions)
		return true, nil
	}
	return false, fmt.Errorf("CRD %s has no version %s", m.CRDName, version)
}

// KeepServed sets whether the CRD serves version, as ServeVersion does, and
// tries again with backoff until it is done or ctx ends.
func (m *Migrator) KeepServed(ctx context.Context, version string, served bool) error {
	backoff, maxBackoff := m.InitialBackoff, m.MaxBackoff
	if backoff <= 0 {
		backoff = defaultInitialBackoff
	}
	if maxBackoff <= 0 {
		maxBackoff = defaultMaxBackoff
	}
	for {
		_, err := m.ServeVersion(ctx, version, served)
		if err == nil {
			return nil
		}
		klog.FromContext(ctx).Error(err, "Setting whether the CRD serves a version; retrying", "crd", m.CRDName, "version", version, "in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}
