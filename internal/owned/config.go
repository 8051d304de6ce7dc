package owned

import (
	"fmt"
	"strings"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/workload"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/tools/cache"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// ConfigIndex is the name of the Robot cache's index by the ConfigMaps and
// Secrets that the pods of a Robot rolling on config changes read
// (ConfigIndexFunc). A Robot that does not roll on them is in no entry of it.
const ConfigIndex = "robot.dev/config"

// ConfigIndexFunc indexes a Robot that rolls on config changes by each
// ConfigMap and Secret its pods read (configKey).
func ConfigIndexFunc(obj interface{}) ([]string, error) {
	robot, ok := obj.(*robotv1beta1.Robot)
	if !ok || !workload.RollsOnConfigChange(robot) {
		return nil, nil
	}
	refs := workload.ConfigRefs(robot)
	keys := make([]string, 0, len(refs))
	for _, ref := range refs {
		keys = append(keys, configKey(ref.Kind, robot.Namespace, ref.Name))
	}
	return keys, nil
}

// configKey is a ConfigMap's or Secret's key in ConfigIndex.
func configKey(kind workload.ConfigKind, namespace, name string) string {
	return string(kind) + "/" + namespace + "/" + name
}

// Config is what the operator sees of the ConfigMaps and Secrets that the
// pods of Robots rolling on config changes read: their metadata alone,
// from metadata informers whose transform keeps a namespace, name, UID and
// resourceVersion (transform.ObjectMetadata), never their data. A change of
// one of them queues the Robots that read it (by ConfigIndex), whose
// Deployment then gets a new config digest (Digest).
type Config struct {
	// configMaps and secrets are the metadata informers; nil where the
	// operator may not watch the kind.
	configMaps cache.SharedIndexInformer
	secrets    cache.SharedIndexInformer
	// robots is the Robot cache's indexer, with ConfigIndex.
	robots cache.Indexer
	// configMapChanged is told of every new version of a ConfigMap, read
	// by a Robot rolling on config or not (nil: nobody).
	configMapChanged func(namespace, name string)
	deps             Deps
}

// NewConfig returns the Config of the metadata informers configMaps and
// secrets (nil: the operator may not watch that kind), and registers their
// event handlers, which queue the Robots of robots (the Robot cache's
// indexer, with ConfigIndex) that read the object changed. It returns nil
// when robots is nil: then no Robot gets a config digest, nor is told of
// one it cannot get. configMapChanged (nil: none) is told of every new
// version of a ConfigMap, whoever reads it: the check before a change
// forgets the refusals a ConfigMap caused (Paths.ConfigMapChanged).
func NewConfig(deps Deps, robots cache.Indexer, configMaps, secrets cache.SharedIndexInformer, configMapChanged func(namespace, name string)) (*Config, error) {
	if robots == nil {
		return nil, nil
	}
	c := &Config{configMaps: configMaps, secrets: secrets, robots: robots, configMapChanged: configMapChanged, deps: deps}
	for kind, informer := range map[workload.ConfigKind]cache.SharedIndexInformer{workload.ConfigMapKind: configMaps, workload.SecretKind: secrets} {
		if informer == nil {
			continue
		}
		changed := func(obj interface{}) { c.changed(kind, obj) }
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: changed,
			UpdateFunc: func(old, new interface{}) {
				// A resync, or nothing that a pod reads: no new version.
				if oldMeta, ok := old.(metav1.Object); ok {
					if newMeta, ok := new.(metav1.Object); ok && oldMeta.GetResourceVersion() == newMeta.GetResourceVersion() {
						return
					}
				}
				changed(new)
			},
			DeleteFunc: changed,
		}); err != nil {
			return nil, fmt.Errorf("adding the %s metadata event handler: %w", kind, err)
		}
	}
	return c, nil
}

// changed queues the Robots rolling on config changes whose pods read obj,
// a ConfigMap or a Secret as kind says.
func (c *Config) changed(kind workload.ConfigKind, obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	object, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	if kind == workload.ConfigMapKind && c.configMapChanged != nil {
		c.configMapChanged(object.GetNamespace(), object.GetName())
	}
	robots, err := c.robots.ByIndex(ConfigIndex, configKey(kind, object.GetNamespace(), object.GetName()))
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, robot := range robots {
		if key, err := cache.ObjectToName(robot); err == nil {
			c.deps.Enqueue(key)
		}
	}
}

// HasSynced reports whether the caches of the kinds watched have synced.
func (c *Config) HasSynced() bool {
	if c == nil {
		return true
	}
	for _, informer := range []cache.SharedIndexInformer{c.configMaps, c.secrets} {
		if informer != nil && !informer.HasSynced() {
			return false
		}
	}
	return true
}

// Digest returns the config digest of robot's pods (workload.ConfigDigest
// of what the caches hold of the objects they read), and the references of
// a kind the operator may not watch, which the digest leaves out. A Robot
// that does not roll on config changes gets neither.
func (c *Config) Digest(robot *robotv1beta1.Robot) (digest string, unwatched []workload.ConfigRef) {
	if c == nil || !workload.RollsOnConfigChange(robot) {
		return "", nil
	}
	var objects []workload.ConfigObject
	for _, ref := range workload.ConfigRefs(robot) {
		informer := c.configMaps
		if ref.Kind == workload.SecretKind {
			informer = c.secrets
		}
		if informer == nil {
			unwatched = append(unwatched, ref)
			continue
		}
		object := workload.ConfigObject{ConfigRef: ref}
		// Not in the cache: it does not exist, and its creation will
		// change the digest.
		if cached, exists, err := informer.GetStore().GetByKey(robot.Namespace + "/" + ref.Name); err == nil && exists {
			if m, ok := cached.(metav1.Object); ok {
				object.UID, object.ResourceVersion = m.GetUID(), m.GetResourceVersion()
			}
		}
		objects = append(objects, object)
	}
	return workload.ConfigDigest(objects), unwatched
}

// NotWatched returns, for a Robot rolling on config changes whose pods read
// objects of a kind the operator may not watch, the error its status
// reports (ReasonConfigNotWatched); nil otherwise, and always when the
// Paths have no Config (c nil).
func (c *Config) NotWatched(robot *robotv1beta1.Robot) error {
	_, unwatched := c.Digest(robot)
	if len(unwatched) == 0 {
		return nil
	}
	names := map[workload.ConfigKind][]string{}
	for _, ref := range unwatched {
		names[ref.Kind] = append(names[ref.Kind], ref.Name)
	}
	var parts []string
	for _, kind := range []workload.ConfigKind{workload.SecretKind, workload.ConfigMapKind} {
		if len(names[kind]) > 0 {
			parts = append(parts, fmt.Sprintf("%ss %s", kind, strings.Join(names[kind], ", ")))
		}
	}
	return &outcome.NotAllowedError{Reason: robotv1beta1.ReasonConfigNotWatched, Message: fmt.Sprintf(
		"spec.rollOnConfigChange: the operator may not watch %s (its RBAC lacks list and watch of them: the chart's configRollouts values, "+
			"or the kustomize component artifacts/config-rollouts-secrets), so their changes do not roll the pods; "+
			"the Deployment is kept, and what the operator may watch rolls them", strings.Join(parts, " and "))}
}

// desiredDeployment returns the Deployment robot asks for, with the config
// digest of its pods when it rolls on config changes, stamped with the
// Robot's generation (workload.Stamped) for the fleet budget.
func (c *Config) desiredDeployment(robot *robotv1beta1.Robot) (*appsv1ac.DeploymentApplyConfiguration, error) {
	digest, _ := c.Digest(robot)
	desired, err := workload.NewDeploymentWithConfig(robot, digest)
	if err != nil {
		return nil, err
	}
	return workload.Stamped(desired, robot), nil
}
