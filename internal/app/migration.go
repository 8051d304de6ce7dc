package app

import (
	"context"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/metrics"
	"github.com/robot-operator/robot-operator/internal/migration"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// newMigrator returns what moves the Robots an earlier release stored as
// v1alpha1 to v1beta1; nil for an operator that watches one namespace, which
// cannot see, nor rewrite, every Robot, and for one that writes nothing
// (observe-only). It records its Warning Events with recorder.
func newMigrator(opts Options, c *clients, recorder record.EventRecorder, registry prometheus.Registerer) (*migration.Migrator, error) {
	if opts.Namespace != metav1.NamespaceAll || opts.ObserveOnly {
		return nil, nil
	}
	observer, err := metrics.NewMigrationMetrics(registry)
	if err != nil {
		return nil, fmt.Errorf("registering the migration's metrics: %w", err)
	}
	return &migration.Migrator{Robots: c.robots.RobotV1beta1(), CRDs: c.crds.ApiextensionsV1().CustomResourceDefinitions(), CRDName: robotsCRD,
		Recorder: recorder, Observer: observer}, nil
}

// migrateStorage runs the migration until it is done or ctx ends: it retries
// by itself, with backoff, what fails (the Robots stored as v1alpha1 are read
// through the conversion webhook, which may not answer yet). Then, when
// serveV1alpha1 is set, it makes the CRD serve v1alpha1 or not, so that a
// version stops being served only after no Robot is stored in it.
func migrateStorage(ctx context.Context, migrator *migration.Migrator, serveV1alpha1 *bool) {
	if migrator == nil {
		return
	}
	if _, err := migrator.Run(ctx); err != nil || serveV1alpha1 == nil {
		return
	}
	_ = migrator.KeepServed(ctx, robotv1alpha1.SchemeGroupVersion.Version, *serveV1alpha1)
}
