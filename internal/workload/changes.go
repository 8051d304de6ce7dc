package workload

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// namedChanges are the spec's fields whose changes SpecChanges tells in
// detail; any other field that changed is named alone, by its JSON name.
var namedChanges = map[string]func(before, after *robotv1beta1.RobotSpec) []string{
	"image":     func(before, after *robotv1beta1.RobotSpec) []string { return imageChange(before.Image, after.Image) },
	"replicas":  replicasChange,
	"env":       envChanges,
	"ports":     portChanges,
	"resources": resourceChanges,
}

// SpecChanges returns what changed from before to after, one short phrase
// each, for a person: the image, the replicas, each environment variable
// and port by name, each resource request and limit, in that order; then
// any other field that changed, by its JSON name, in the spec's order.
// Values the API server would store alike (1000m and 1 CPU) are no change.
func SpecChanges(before, after *robotv1beta1.RobotSpec) []string {
	var changes []string
	for _, field := range []string{"image", "replicas", "env", "ports", "resources"} {
		changes = append(changes, namedChanges[field](before, after)...)
	}
	specType := reflect.TypeOf(*before)
	beforeValue, afterValue := reflect.ValueOf(*before), reflect.ValueOf(*after)
	for i := range specType.NumField() {
		name, _, _ := strings.Cut(specType.Field(i).Tag.Get("json"), ",")
		if _, named := namedChanges[name]; named {
			continue
		}
		if !apiequality.Semantic.DeepEqual(beforeValue.Field(i).Interface(), afterValue.Field(i).Interface()) {
			changes = append(changes, name+" changed")
		}
	}
	return changes
}

// DescribeChanges joins changes with "; " in at most limit bytes: as many
// as fit, in order, then "and N more" for the rest. When not even the
// first fits, it says how many there are.
func DescribeChanges(changes []string, limit int) string {
	for shown := len(changes); shown > 0; shown-- {
		text := strings.Join(changes[:shown], "; ")
		if rest := len(changes) - shown; rest > 0 {
			text += fmt.Sprintf("; and %d more", rest)
		}
		if len(text) <= limit {
			return text
		}
	}
	switch len(changes) {
	case 0:
		return ""
	case 1:
		return "1 change"
	}
	return fmt.Sprintf("%d changes", len(changes))
}

// imageChange says how the image changed: the repository once, when only
// the tag or digest changed.
func imageChange(before, after string) []string {
	if before == after {
		return nil
	}
	repository, tag := splitImage(before)
	if afterRepository, afterTag := splitImage(after); repository == afterRepository && tag != "" && afterTag != "" {
		return []string{fmt.Sprintf("image %s → %s", before, afterTag)}
	}
	return []string{fmt.Sprintf("image %s → %s", before, after)}
}

// splitImage splits an image reference into its repository and its tag or
// digest (with the separator, @ or :, dropped): "" when it has neither. A
// colon before the last slash is a registry's port.
func splitImage(image string) (repository, tag string) {
	if at := strings.LastIndex(image, "@"); at >= 0 {
		return image[:at], image[at+1:]
	}
	if colon := strings.LastIndex(image, ":"); colon > strings.LastIndex(image, "/") {
		return image[:colon], image[colon+1:]
	}
	return image, ""
}

// replicasChange says how the number of replicas changed; unset is the
// default, 1.
func replicasChange(before, after *robotv1beta1.RobotSpec) []string {
	count := func(replicas *int32) string {
		if replicas == nil {
			return "1 (default)"
		}
		return fmt.Sprint(*replicas)
	}
	if count(before.Replicas) == count(after.Replicas) {
		return nil
	}
	return []string{fmt.Sprintf("replicas %s → %s", count(before.Replicas), count(after.Replicas))}
}

// envChanges names each environment variable added, removed or changed,
// in after's order then the removed ones in before's. Values are not
// shown: they may be long, and are not the status's to repeat.
func envChanges(before, after *robotv1beta1.RobotSpec) []string {
	return byName("env", before.Env, after.Env, func(e corev1.EnvVar) string { return e.Name }, func(name string, was, is *corev1.EnvVar) string {
		switch {
		case was == nil:
			return "env " + name + " added"
		case is == nil:
			return "env " + name + " removed"
		}
		return "env " + name + " changed"
	})
}

// portChanges names each port added, removed or changed.
func portChanges(before, after *robotv1beta1.RobotSpec) []string {
	return byName("ports", before.Ports, after.Ports, func(p robotv1beta1.RobotPort) string { return p.Name }, func(name string, was, is *robotv1beta1.RobotPort) string {
		switch {
		case was == nil:
			return fmt.Sprintf("port %s (%d) added", name, is.ContainerPort)
		case is == nil:
			return "port " + name + " removed"
		case was.ContainerPort != is.ContainerPort:
			return fmt.Sprintf("port %s %d → %d", name, was.ContainerPort, is.ContainerPort)
		}
		return "port " + name + " changed"
	})
}

// byName compares two lists of items keyed by name, and describes each
// one added, removed or changed with describe (was or is nil for added
// and removed). Lists that differ in their order alone are field
// reordered.
func byName[T any](field string, before, after []T, name func(T) string, describe func(name string, was, is *T) string) []string {
	find := func(items []T, key string) *T {
		if i := slices.IndexFunc(items, func(item T) bool { return name(item) == key }); i >= 0 {
			return &items[i]
		}
		return nil
	}
	var changes []string
	for i := range after {
		key := name(after[i])
		old := find(before, key)
		if old == nil || !apiequality.Semantic.DeepEqual(*old, after[i]) {
			changes = append(changes, describe(key, old, &after[i]))
		}
	}
	for i := range before {
		if key := name(before[i]); find(after, key) == nil {
			changes = append(changes, describe(key, &before[i], nil))
		}
	}
	if len(changes) == 0 && !apiequality.Semantic.DeepEqual(before, after) {
		changes = append(changes, field+" reordered")
	}
	return changes
}

// resourceChanges says how each resource request and limit changed, cpu
// and memory first.
func resourceChanges(before, after *robotv1beta1.RobotSpec) []string {
	var changes []string
	for _, kind := range []struct {
		word          string
		before, after corev1.ResourceList
	}{
		{"request", before.Resources.Requests, after.Resources.Requests},
		{"limit", before.Resources.Limits, after.Resources.Limits},
	} {
		for _, name := range resourceNames(kind.before, kind.after) {
			was, hadOld := kind.before[name]
			is, hasNew := kind.after[name]
			switch {
			case !hadOld:
				changes = append(changes, fmt.Sprintf("%s %s %s added", name, kind.word, is.String()))
			case !hasNew:
				changes = append(changes, fmt.Sprintf("%s %s %s removed", name, kind.word, was.String()))
			case was.Cmp(is) != 0:
				changes = append(changes, fmt.Sprintf("%s %s %s → %s", name, kind.word, was.String(), is.String()))
			}
		}
	}
	if !apiequality.Semantic.DeepEqual(before.Resources.Claims, after.Resources.Claims) {
		changes = append(changes, "resource claims changed")
	}
	return changes
}

// resourceNames are the names in either list: cpu and memory first, the
// rest sorted.
func resourceNames(lists ...corev1.ResourceList) []corev1.ResourceName {
	var names []corev1.ResourceName
	for _, list := range lists {
		for name := range list {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	rank := func(name corev1.ResourceName) int {
		switch name {
		case corev1.ResourceCPU:
			return 0
		case corev1.ResourceMemory:
			return 1
		}
		return 2
	}
	slices.SortFunc(names, func(a, b corev1.ResourceName) int {
		if rank(a) != rank(b) {
			return rank(a) - rank(b)
		}
		return strings.Compare(string(a), string(b))
	})
	return names
}
