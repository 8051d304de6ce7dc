package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotclient "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/typed/robot/v1beta1"
)

// pageSize is how many Robots one list returns: the migration reads them
// from the API server in pages, not all at once.
const pageSize = 500

// The backoff between two attempts, unless the Migrator sets its own.
const (
	defaultInitialBackoff = time.Second
	defaultMaxBackoff     = 5 * time.Minute
)

// EventStorageMigrationFailed is the reason of the Warning Event on a Robot
// the API server refused to write again in the storage version.
const EventStorageMigrationFailed = "StorageMigrationFailed"

// fieldManager is the field manager of the migration's writes.
const fieldManager = "robot-operator-migration"

// Observer is told how the migration goes, for the metrics.
type Observer interface {
	// RewriteFailed is called for each refused rewrite of a Robot.
	RewriteFailed()
	// RobotsLeft is called after each attempt with the number of Robots
	// still to rewrite: those whose rewrite failed, 0 once done.
	RobotsLeft(n int)
}

// Migrator rewrites Robots in the storage version.
type Migrator struct {
	Robots  robotclient.RobotsGetter // every namespace's
	CRDs    apiextensionsclient.CustomResourceDefinitionInterface
	CRDName string
	// Recorder, when set, records a Warning Event on each Robot whose
	// rewrite failed.
	Recorder record.EventRecorder
	// Observer, when set, is told of failures and of the Robots left.
	Observer Observer
	// InitialBackoff and MaxBackoff bound the wait between two attempts;
	// zero means 1 second and 5 minutes.
	InitialBackoff, MaxBackoff time.Duration
}

// progress is what one run of the migration knows between its attempts.
type progress struct {
	// listed: a full pass over every Robot was made while the CRD had
	// generation. A change of the CRD's spec (its storage version flipped
	// and back, say) may have let Robots be stored in another version
	// meanwhile, so a new generation needs a new full pass.
	listed     bool
	generation int64
	// left are the Robots whose rewrite failed since that full pass.
	left []robotv1beta1.Robot
	// patched counts the Robots rewritten.
	patched int
}

// Run migrates, if the CRD's storedVersions lists a version other than the
// storage version, and returns once done or when ctx ends. It writes every
// Robot again with an empty patch (the API server stores it in the storage
// version, and skips the write of one already stored so). A Robot whose
// write fails does not stop the others: it gets a Warning Event, and only
// the failed Robots are tried again, with backoff. storedVersions is set to
// the storage version alone only once every Robot was rewritten, and only if
// the CRD's spec did not change since the pass over them began. Run returns
// how many Robots it patched, and, when ctx ended first, the last error.
func (m *Migrator) Run(ctx context.Context) (int, error) {
	logger := klog.FromContext(ctx)
	backoff, maxBackoff := m.InitialBackoff, m.MaxBackoff
	if backoff <= 0 {
		backoff = defaultInitialBackoff
	}
	if maxBackoff <= 0 {
		maxBackoff = defaultMaxBackoff
	}
	var p progress
	for {
		done, err := m.attempt(ctx, &p)
		if done {
			return p.patched, nil
		}
		if ctx.Err() != nil {
			return p.patched, errors.Join(err, ctx.Err())
		}
		logger.Error(err, "Moving the Robots to the storage version is not done; retrying", "crd", m.CRDName, "in", backoff)
		select {
		case <-ctx.Done():
			return p.patched, errors.Join(err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// attempt makes one step of the migration: a full pass, or a retry of the
// Robots that failed, then the cleanup of storedVersions when none is left.
// It reports whether the migration is done.
func (m *Migrator) attempt(ctx context.Context, p *progress) (bool, error) {
	logger := klog.FromContext(ctx)
	storage := robotv1beta1.SchemeGroupVersion.Version
	crd, err := m.CRDs.Get(ctx, m.CRDName, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading CRD %s: %w", m.CRDName, err)
	}
	if !needsMigration(crd, storage) {
		m.observeLeft(0)
		return true, nil
	}
	if stored := storageVersionOf(crd); stored != storage {
		return false, fmt.Errorf("CRD %s stores %q, and this operator %q: install the CRD of this release", m.CRDName, stored, storage)
	}
	if !p.listed || p.generation != crd.Generation {
		logger.Info("Rewriting the Robots in the storage version", "crd", m.CRDName, "storedVersions", crd.Status.StoredVersions, "storageVersion", storage)
		p.listed, p.generation, p.left = false, crd.Generation, nil
		if err := m.rewriteAll(ctx, p); err != nil {
			return false, err
		}
		p.listed = true
	} else {
		logger.Info("Rewriting again the Robots whose rewrite failed", "crd", m.CRDName, "robots", len(p.left))
		p.left = m.rewrite(ctx, p, p.left)
	}
	m.observeLeft(len(p.left))
	if len(p.left) > 0 {
		names := make([]string, 0, min(len(p.left), 5))
		for _, robot := range p.left[:min(len(p.left), 5)] {
			names = append(names, robot.Namespace+"/"+robot.Name)
		}
		return false, fmt.Errorf("%d Robots could not be rewritten in %s (%v...): storedVersions stays %v until they are",
			len(p.left), storage, names, crd.Status.StoredVersions)
	}
	if err := m.cleanStoredVersions(ctx, p.generation); err != nil {
		p.listed = false
		return false, err
	}
	logger.Info("Rewrote the Robots in the storage version", "crd", m.CRDName, "robots", p.patched, "storedVersions", []string{storage})
	return true, nil
}

// rewriteAll lists every Robot, page by page, and rewrites each; those that
// fail are added to p.left.
func (m *Migrator) rewriteAll(ctx context.Context, p *progress) error {
	options := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := m.Robots.Robots(metav1.NamespaceAll).List(ctx, options)
		if err != nil {
			return fmt.Errorf("listing Robots to rewrite them in %s: %w", robotv1beta1.SchemeGroupVersion.Version, err)
		}
		p.left = append(p.left, m.rewrite(ctx, p, list.Items)...)
		if list.Continue == "" {
			return nil
		}
		options.Continue = list.Continue
	}
}

// rewrite writes each of robots again, and returns those whose write
// failed, each reported.
func (m *Migrator) rewrite(ctx context.Context, p *progress, robots []robotv1beta1.Robot) []robotv1beta1.Robot {
	var failed []robotv1beta1.Robot
	for i := range robots {
		robot := &robots[i]
		_, err := m.Robots.Robots(robot.Namespace).Patch(ctx, robot.Name, types.MergePatchType, []byte("{}"), metav1.PatchOptions{FieldManager: fieldManager})
		switch {
		case ctx.Err() != nil:
			// Leadership lost, or shutting down: no Robot is at fault,
			// and Run returns.
			return append(failed, robots[i:]...)
		case apierrors.IsNotFound(err):
			// Deleted meanwhile: nothing left to rewrite.
		case err != nil:
			failed = append(failed, *robot)
			m.reportFailure(ctx, robot, err)
		default:
			p.patched++
		}
	}
	return failed
}

// reportFailure tells of a Robot whose rewrite failed: in the log, with a
// Warning Event on the Robot, and in the metrics.
func (m *Migrator) reportFailure(ctx context.Context, robot *robotv1beta1.Robot, err error) {
	storage := robotv1beta1.SchemeGroupVersion.Version
	klog.FromContext(ctx).Error(err, "Rewriting a Robot in the storage version failed; retrying it later", "robot", klog.KObj(robot), "storageVersion", storage)
	if m.Observer != nil {
		m.Observer.RewriteFailed()
	}
	if m.Recorder != nil {
		m.Recorder.Eventf(robot, corev1.EventTypeWarning, EventStorageMigrationFailed,
			"The API server refused to write the Robot again in the storage version %s: %v. Until it is written, the CRD keeps "+
				"earlier versions in status.storedVersions, and reading the Robot may need the conversion webhook. "+
				"Let the operator's field manager %q write the Robot (an admission policy or webhook refuses it); the operator retries.",
			storage, err, fieldManager)
	}
}

func (m *Migrator) observeLeft(n int) {
	if m.Observer != nil {
		m.Observer.RobotsLeft(n)
	}
}

// errCRDChanged: the CRD's spec changed during the pass over the Robots.
var errCRDChanged = errors.New("the CRD changed while its Robots were rewritten; rewriting them again")

// cleanStoredVersions sets the CRD's storedVersions to the storage version
// alone, if its spec is still that of generation: it reads the CRD again and
// updates it with that read's resourceVersion, so that a change in between
// makes the update fail rather than pass unseen.
func (m *Migrator) cleanStoredVersions(ctx context.Context, generation int64) error {
	storage := robotv1beta1.SchemeGroupVersion.Version
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := m.CRDs.Get(ctx, m.CRDName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !needsMigration(crd, storage) {
			return nil
		}
		if crd.Generation != generation || storageVersionOf(crd) != storage {
			return errCRDChanged
		}
		crd = crd.DeepCopy()
		crd.Status.StoredVersions = []string{storage}
		_, err = m.CRDs.UpdateStatus(ctx, crd, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("setting CRD %s's storedVersions to [%s]: %w", m.CRDName, storage, err)
	}
	return nil
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
