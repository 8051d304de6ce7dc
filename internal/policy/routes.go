package policy

import (
	"cmp"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/robot-operator/robot-operator/internal/outcome"

	"k8s.io/apimachinery/pkg/util/validation"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Routes is what the administrator allows of the HTTPRoutes that Robots ask
// for (spec.http). RBAC's edit role does not grant HTTPRoutes, and the
// operator's ServiceAccount writes them, so these switches are all that
// stands between a Robot writer and a route. The zero Routes allows every
// route the CRD admits.
type Routes struct {
	// Off, when true, has the operator make no HTTPRoute: a Robot that asks
	// for one reports RouteNotAllowed, and a route it already has is left
	// as it is, neither changed nor deleted, so that turning routes off
	// cuts no traffic unannounced.
	Off bool
	// Gateways, when not nil, are the only Gateways a route may attach to:
	// "namespace/name", "namespace/*" for every Gateway of a namespace, or
	// "*" for any.
	Gateways []string
	// Hostnames, when not nil, are the hostname patterns (see
	// hostnameAllowed) allowed to the Robots of each namespace; the key "*"
	// holds those allowed in every namespace.
	Hostnames map[string][]string
}

// flags registers the routes' flags on fs; the returned function reads
// them into r once fs is parsed.
func (r *Routes) flags(fs *flag.FlagSet) func() error {
	on := fs.Bool("http-routes", true, "Whether the operator makes the HTTPRoutes that Robots ask for (spec.http). false: a Robot with spec.http reports Synced=False, RouteNotAllowed, and gets no route; a route it already has is left as it is, and deleted only with the Robot or its spec.http. RBAC's edit role does not grant HTTPRoutes: through spec.http, whoever may write a Robot makes one.")
	gateways := fs.String("route-gateways", "*", "The Gateways a Robot's HTTPRoute may attach to, comma-separated: NAMESPACE/NAME, NAMESPACE/* for every Gateway of a namespace, or * for any (the Gateway's own allowedRoutes still decides whether it accepts the route). A Robot that names another reports Synced=False, RouteNotAllowed.")
	hostnames := fs.String("route-hostnames", "*=*", "The hostnames a Robot's HTTPRoute may answer for, per namespace, comma-separated: NAMESPACE=PATTERN, where NAMESPACE * is every namespace and PATTERN is a hostname (shop.example.com), *.DOMAIN (every name under DOMAIN, and the wildcards under it, *.DOMAIN included), or * (any, and a route with no hostnames, which answers for every host its Gateway accepts). A namespace may be named several times. A Robot that asks for another hostname, or for none without *, reports Synced=False, RouteNotAllowed.")
	return func() error {
		r.Off = !*on
		var err error
		if r.Gateways, err = parseGateways(*gateways); err != nil {
			return err
		}
		r.Hostnames, err = parseHostnames(*hostnames)
		return err
	}
}

// list splits a comma-separated flag value into its trimmed, non-empty
// items; never nil, so that an empty value allows nothing.
func list(value string) []string {
	items := []string{}
	for item := range strings.SplitSeq(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// parseGateways reads -route-gateways.
func parseGateways(value string) ([]string, error) {
	gateways := list(value)
	for _, gateway := range gateways {
		if gateway == "*" {
			continue
		}
		namespace, name, ok := strings.Cut(gateway, "/")
		if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || name != "*" && len(validation.IsDNS1123Subdomain(name)) > 0 {
			return nil, fmt.Errorf("-route-gateways: %q is not NAMESPACE/NAME, NAMESPACE/* or *", gateway)
		}
	}
	return gateways, nil
}

// parseHostnames reads -route-hostnames.
func parseHostnames(value string) (map[string][]string, error) {
	hostnames := map[string][]string{}
	for _, entry := range list(value) {
		namespace, pattern, ok := strings.Cut(entry, "=")
		namespace, pattern = strings.TrimSpace(namespace), strings.TrimSpace(pattern)
		if !ok || namespace != "*" && len(validation.IsDNS1123Label(namespace)) > 0 {
			return nil, fmt.Errorf("-route-hostnames: %q is not NAMESPACE=PATTERN (NAMESPACE a namespace's name, or * for every one)", entry)
		}
		if pattern != "*" && len(validation.IsDNS1123Subdomain(pattern)) > 0 && len(validation.IsWildcardDNS1123Subdomain(pattern)) > 0 {
			return nil, fmt.Errorf("-route-hostnames: in %q, %q is not a hostname, *.DOMAIN or *", entry, pattern)
		}
		if !slices.Contains(hostnames[namespace], pattern) {
			hostnames[namespace] = append(hostnames[namespace], pattern)
		}
	}
	return hostnames, nil
}

// CheckRoute returns why the operator may not make the HTTPRoute robot asks
// for, as an outcome.NotAllowedError; nil when it may, or when the Robot
// asks for none.
func (p *Policy) CheckRoute(robot *robotv1beta1.Robot) error {
	if robot.Spec.HTTP == nil {
		return nil
	}
	r := p.Routes
	if r.Off {
		return routeNotAllowed("the operator makes no HTTPRoutes (-http-routes=false): remove spec.http, or ask the cluster's administrators for another way in")
	}
	if r.Gateways != nil && !slices.Contains(r.Gateways, "*") {
		for i, gateway := range robot.Spec.HTTP.Gateways {
			namespace := cmp.Or(gateway.Namespace, robot.Namespace)
			if !slices.Contains(r.Gateways, namespace+"/"+gateway.Name) && !slices.Contains(r.Gateways, namespace+"/*") {
				return routeNotAllowed(fmt.Sprintf("spec.http.gateways[%d], Gateway %s/%s, is not one a route may attach to: -route-gateways allows %s",
					i, namespace, gateway.Name, allowedList(r.Gateways)))
			}
		}
	}
	if r.Hostnames == nil {
		return nil
	}
	patterns := append(slices.Clone(r.Hostnames[robot.Namespace]), r.Hostnames["*"]...)
	if len(robot.Spec.HTTP.Hostnames) == 0 && !slices.Contains(patterns, "*") {
		return routeNotAllowed(fmt.Sprintf("spec.http.hostnames is empty, so the route would answer for every host its Gateways accept: -route-hostnames allows namespace %s %s",
			robot.Namespace, allowedList(patterns)))
	}
	for i, hostname := range robot.Spec.HTTP.Hostnames {
		if !slices.ContainsFunc(patterns, func(pattern string) bool { return hostnameAllowed(pattern, hostname) }) {
			return routeNotAllowed(fmt.Sprintf("spec.http.hostnames[%d], %q, is not a hostname namespace %s may use: -route-hostnames allows it %s",
				i, hostname, robot.Namespace, allowedList(patterns)))
		}
	}
	return nil
}

// hostnameAllowed reports whether pattern allows a route's hostname: "*"
// any; "*.example.com" every name under example.com (a.example.com,
// a.b.example.com, not example.com) and the wildcards whose names are all
// under it (*.example.com, *.a.example.com, not *.com); any other pattern
// that name alone, never a wildcard. A wildcard is a set of names, as the
// Gateway API reads it, and is allowed only when every name in it is.
func hostnameAllowed(pattern, hostname string) bool {
	if pattern == "*" {
		return true
	}
	suffix, isWildcard := strings.CutPrefix(pattern, "*")
	if !isWildcard {
		return hostname == pattern
	}
	if under, ok := strings.CutPrefix(hostname, "*"); ok {
		// *.a.example.com is the names under .a.example.com.
		return strings.HasSuffix(under, suffix)
	}
	return len(hostname) > len(suffix) && strings.HasSuffix(hostname, suffix)
}

// allowedList says what an allowlist allows, for a message.
func allowedList(items []string) string {
	if len(items) == 0 {
		return "nothing"
	}
	quoted := make([]string, len(items))
	for i, item := range items {
		quoted[i] = strconv.Quote(item)
	}
	return "only " + strings.Join(quoted, ", ")
}

// routeNotAllowed is the refusal of a Robot's route.
func routeNotAllowed(message string) error {
	return &outcome.NotAllowedError{Reason: robotv1beta1.ReasonRouteNotAllowed, Message: message}
}
