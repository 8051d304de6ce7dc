package preflight

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// SecretsRetry is how long the Checker reads no Secret after it was
// forbidden to: reading Secrets is off in the operator's default RBAC, and
// a grant is rare, so the checks do not ask each time.
const SecretsRetry = 10 * time.Minute

// Reference is an object that a pod names, and, for a ConfigMap or a
// Secret, a key it reads; From says which field of the pod names it.
type Reference struct {
	Kind string // ConfigMap, Secret, ServiceAccount or PriorityClass
	Name string
	Key  string
	From string
}

// References returns what the pods of spec need to start, in the order
// found: the ConfigMaps and Secrets of volumes, envFrom and env that are
// not optional (each key used), the pull Secrets, the ServiceAccount and
// the PriorityClass.
func References(spec *corev1.PodSpec) []Reference {
	var refs []Reference
	add := func(kind, name, key, from string, optional *bool) {
		if name != "" && (optional == nil || !*optional) {
			refs = append(refs, Reference{Kind: kind, Name: name, Key: key, From: from})
		}
	}
	for _, volume := range spec.Volumes {
		from := "volume " + volume.Name
		if cm := volume.ConfigMap; cm != nil {
			add("ConfigMap", cm.Name, "", from, cm.Optional)
			for _, item := range cm.Items {
				add("ConfigMap", cm.Name, item.Key, from, cm.Optional)
			}
		}
		if secret := volume.Secret; secret != nil {
			add("Secret", secret.SecretName, "", from, secret.Optional)
			for _, item := range secret.Items {
				add("Secret", secret.SecretName, item.Key, from, secret.Optional)
			}
		}
		if projected := volume.Projected; projected != nil {
			for _, source := range projected.Sources {
				if cm := source.ConfigMap; cm != nil {
					add("ConfigMap", cm.Name, "", from, cm.Optional)
					for _, item := range cm.Items {
						add("ConfigMap", cm.Name, item.Key, from, cm.Optional)
					}
				}
				if secret := source.Secret; secret != nil {
					add("Secret", secret.Name, "", from, secret.Optional)
					for _, item := range secret.Items {
						add("Secret", secret.Name, item.Key, from, secret.Optional)
					}
				}
			}
		}
	}
	containers := slices.Concat(spec.InitContainers, spec.Containers)
	for _, container := range containers {
		for _, source := range container.EnvFrom {
			from := "envFrom of container " + container.Name
			if cm := source.ConfigMapRef; cm != nil {
				add("ConfigMap", cm.Name, "", from, cm.Optional)
			}
			if secret := source.SecretRef; secret != nil {
				add("Secret", secret.Name, "", from, secret.Optional)
			}
		}
		for _, env := range container.Env {
			if env.ValueFrom == nil {
				continue
			}
			from := "env " + env.Name + " of container " + container.Name
			if ref := env.ValueFrom.ConfigMapKeyRef; ref != nil {
				add("ConfigMap", ref.Name, ref.Key, from, ref.Optional)
			}
			if ref := env.ValueFrom.SecretKeyRef; ref != nil {
				add("Secret", ref.Name, ref.Key, from, ref.Optional)
			}
		}
	}
	for _, pull := range spec.ImagePullSecrets {
		add("Secret", pull.Name, "", "imagePullSecrets", nil)
	}
	add("ServiceAccount", spec.ServiceAccountName, "", "serviceAccountName", nil)
	add("PriorityClass", spec.PriorityClassName, "", "priorityClassName", nil)
	return refs
}

// lookUp looks up what the pods of spec, in namespace, name: one GET per
// object, whatever the number of its keys used. A missing object or key
// rejects the change; a lookup that fails otherwise is skipped, as is every
// Secret while the operator may not read them.
func (c *Checker) lookUp(ctx context.Context, namespace string, spec *corev1.PodSpec) (verdict, string) {
	keys := map[string]func(key string) bool{}
	var result verdict
	var missing []string
	for _, ref := range References(spec) {
		id := ref.Kind + "/" + ref.Name
		has, seen := keys[id]
		if !seen {
			var err error
			has, err = c.get(ctx, namespace, ref)
			switch {
			case apierrors.IsNotFound(err):
				has = nil
				missing = append(missing, fmt.Sprintf("%s %q, named by %s, is not found", ref.Kind, ref.Name, ref.From))
				result.configMaps = noteConfigMap(result.configMaps, namespace, ref)
			case err != nil:
				klog.FromContext(ctx).V(2).Info("Could not look up what the new pods name: skipped", "kind", ref.Kind, "name", ref.Name, "err", err)
				has = func(string) bool { return true }
			}
			keys[id] = has
		}
		if has != nil && ref.Key != "" && !has(ref.Key) {
			missing = append(missing, fmt.Sprintf("%s %q has no key %q, which %s reads", ref.Kind, ref.Name, ref.Key, ref.From))
			result.configMaps = noteConfigMap(result.configMaps, namespace, ref)
		}
	}
	if len(missing) == 0 {
		return verdict{}, Passed
	}
	message := missing[0]
	if len(missing) > 1 {
		message = fmt.Sprintf("%s; and %d more", message, len(missing)-1)
	}
	result.err = rejected(message)
	return result, Rejected
}

// noteConfigMap adds ref's ConfigMap to configMaps, whose change should
// check the template again.
func noteConfigMap(configMaps []string, namespace string, ref Reference) []string {
	key := namespace + "/" + ref.Name
	if ref.Kind != "ConfigMap" || slices.Contains(configMaps, key) {
		return configMaps
	}
	return append(configMaps, key)
}

// get reads ref's object, and returns whether it holds a key; an error
// when it could not be read.
func (c *Checker) get(ctx context.Context, namespace string, ref Reference) (func(key string) bool, error) {
	all := func(string) bool { return true }
	switch ref.Kind {
	case "ConfigMap":
		cm, err := c.client.CoreV1().ConfigMaps(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return func(key string) bool {
			_, inData := cm.Data[key]
			_, inBinary := cm.BinaryData[key]
			return inData || inBinary
		}, nil
	case "Secret":
		if !c.secrets.allowed(time.Now()) {
			return all, nil
		}
		secret, err := c.client.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsForbidden(err) {
			c.secrets.forbid(time.Now().Add(SecretsRetry))
			klog.FromContext(ctx).Info("The operator may not read Secrets: the checks of new pod templates skip them", "retryAfter", SecretsRetry)
			return all, nil
		}
		if err != nil {
			return nil, err
		}
		return func(key string) bool { _, ok := secret.Data[key]; return ok }, nil
	case "ServiceAccount":
		_, err := c.client.CoreV1().ServiceAccounts(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		return all, err
	case "PriorityClass":
		_, err := c.client.SchedulingV1().PriorityClasses().Get(ctx, ref.Name, metav1.GetOptions{})
		return all, err
	}
	return all, nil
}

// secretAccess remembers until when the operator reads no Secret.
type secretAccess struct {
	mu    sync.Mutex
	until time.Time
}

func (s *secretAccess) allowed(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !now.Before(s.until)
}

func (s *secretAccess) forbid(until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.until = until
}
