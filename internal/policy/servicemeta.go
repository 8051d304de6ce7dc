package policy

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/robot-operator/robot-operator/internal/outcome"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// ServiceMetadata is what the administrator allows of the annotations,
// labels and load balancer class that Robots put on their Services. Other
// controllers act on a Service because of them (publish its name in DNS,
// expose it to a tailnet or another cluster, route a shared proxy to it),
// whatever its type; and admission policies on tenants' Services do not see
// them, since the operator's ServiceAccount writes the Service. The zero
// ServiceMetadata allows everything the CRD admits.
type ServiceMetadata struct {
	// Annotations, when not nil, are the annotation key prefixes a Robot's
	// service.annotations may use. "*" allows every key but the exposing
	// ones (ExposingAnnotations), which only an entry of their own allows.
	Annotations []string
	// Labels are the same for service.labels, with ExposingLabels.
	Labels []string
	// LoadBalancerClasses, when not nil, are the classes a Robot's
	// service.loadBalancerClass may name; "*" allows any.
	LoadBalancerClasses []string
}

// ExposingAnnotations are the prefixes of the Service annotation keys that
// have a controller other than Kubernetes' own expose a Service of any type,
// or publish its name: "*" does not allow them. Each is documented in
// docs/security.md.
var ExposingAnnotations = []string{
	"external-dns.alpha.kubernetes.io/", // external-dns publishes a DNS record
	"tailscale.com/",                    // the Tailscale operator exposes the Service to a tailnet
	"cloud.google.com/neg",              // GKE makes network endpoint groups a load balancer can use
	"getambassador.io/",                 // Emissary-ingress routes its shared proxy to the Service
	"consul.hashicorp.com/service-sync", // Consul's catalog sync registers the Service
	"service.cilium.io/global",          // Cilium's cluster mesh shares the Service with other clusters
	"io.cilium/global-service",          // the same, in its older form
	"skupper.io/",                       // Skupper exposes the Service on its network of sites
}

// ExposingLabels are the prefixes of the Service label keys that have
// another controller expose the Service: "*" does not allow them.
var ExposingLabels = []string{
	"mirror.linkerd.io/exported", // Linkerd's multicluster mirrors the Service into other clusters
}

// flags registers the Service metadata's flags on fs; the returned function
// reads them into m once fs is parsed.
func (m *ServiceMetadata) flags(fs *flag.FlagSet) func() error {
	annotations := fs.String("service-annotations", "*", "The annotation key prefixes a Robot's service.annotations may use, comma-separated (e.g. prometheus.io/,service.beta.kubernetes.io/aws-load-balancer-internal). * allows every key but those that have another controller expose the Service or publish its name ("+strings.Join(ExposingAnnotations, ", ")+"), which only a prefix of their own allows (e.g. *,external-dns.alpha.kubernetes.io/); empty allows none. A Robot that asks for another reports Synced=False, ServiceMetadataNotAllowed, and its Service is left as it is.")
	labels := fs.String("service-labels", "*", "The label key prefixes a Robot's service.labels may use, comma-separated, as -service-annotations; * allows every key but those that expose the Service ("+strings.Join(ExposingLabels, ", ")+").")
	classes := fs.String("service-load-balancer-classes", "*", "The load balancer classes a Robot's service.loadBalancerClass may name, comma-separated; * any, empty none (only the cluster's default implementation). A Robot that names another reports Synced=False, LoadBalancerClassNotAllowed, and its Service is left as it is.")
	return func() error {
		m.Annotations, m.Labels, m.LoadBalancerClasses = list(*annotations), list(*labels), list(*classes)
		return nil
	}
}

// CheckServiceMetadata returns why the operator may not write the
// annotations, labels or load balancer class robot asks for on its Service,
// as an outcome.NotAllowedError; nil when it may, or when the Robot asks
// for no Service.
func (p *Policy) CheckServiceMetadata(robot *robotv1beta1.Robot) error {
	service := robot.Spec.Service
	if service == nil {
		return nil
	}
	m := p.ServiceMetadata
	if refused := refusedKeys(service.Annotations, m.Annotations, ExposingAnnotations); len(refused) > 0 {
		return &outcome.NotAllowedError{Reason: robotv1beta1.ReasonServiceMetadataNotAllowed,
			Message: keysMessage("service.annotations", refused, "-service-annotations", m.Annotations, ExposingAnnotations)}
	}
	if refused := refusedKeys(service.Labels, m.Labels, ExposingLabels); len(refused) > 0 {
		return &outcome.NotAllowedError{Reason: robotv1beta1.ReasonServiceMetadataNotAllowed,
			Message: keysMessage("service.labels", refused, "-service-labels", m.Labels, ExposingLabels)}
	}
	if class := service.LoadBalancerClass; class != "" && m.LoadBalancerClasses != nil &&
		!slices.Contains(m.LoadBalancerClasses, "*") && !slices.Contains(m.LoadBalancerClasses, class) {
		return &outcome.NotAllowedError{Reason: robotv1beta1.ReasonLoadBalancerClassNotAllowed,
			Message: fmt.Sprintf("service.loadBalancerClass %q is not a class the operator may ask for: -service-load-balancer-classes allows %s; leave it unset for the cluster's default",
				class, allowedList(m.LoadBalancerClasses))}
	}
	return nil
}

// refusedKeys returns the keys of metadata, sorted, that allowed (key
// prefixes, nil for all) does not allow: "*" allows every key no exposing
// prefix matches.
func refusedKeys(metadata map[string]string, allowed, exposing []string) []string {
	if allowed == nil {
		return nil
	}
	var refused []string
	for _, key := range slices.Sorted(maps.Keys(metadata)) {
		byPrefix := slices.ContainsFunc(allowed, func(prefix string) bool { return prefix != "*" && strings.HasPrefix(key, prefix) })
		byStar := slices.Contains(allowed, "*") && !slices.ContainsFunc(exposing, func(prefix string) bool { return strings.HasPrefix(key, prefix) })
		if !byPrefix && !byStar {
			refused = append(refused, key)
		}
	}
	return refused
}

// keysMessage says which keys of field are refused, and what flag allows.
func keysMessage(field string, refused []string, flag string, allowed, exposing []string) string {
	const most = 5
	names := refused
	if len(names) > most {
		names = names[:most]
	}
	message := fmt.Sprintf("%s key %s is not allowed", field, strings.Join(names, ", "))
	if len(refused) > 1 {
		message = fmt.Sprintf("%s keys %s are not allowed", field, strings.Join(names, ", "))
	}
	if len(refused) > most {
		message += fmt.Sprintf(" (and %d more)", len(refused)-most)
	}
	if slices.Contains(allowed, "*") {
		return fmt.Sprintf("%s: they have another controller expose the Service or publish its name, which %s=* does not allow (ask the cluster's administrators to add the prefix; exposing prefixes: %s); the Service is left as it is",
			message, flag, strings.Join(exposing, ", "))
	}
	return fmt.Sprintf("%s: %s allows %s; the Service is left as it is", message, flag, allowedList(allowed))
}
