package owned

import (
	"sync"

	"k8s.io/client-go/tools/cache"
)

// Optional describes the API of a kind whose CRD may be missing from the
// cluster (the Gateway API's HTTPRoute): the kind is watched only once its
// CRD is there, and a cluster without it costs nothing.
type Optional struct {
	// CRD is the name of the kind's CustomResourceDefinition, and Version
	// the version the operator reads: the kind is there once the CRD is
	// established and serves it.
	CRD, Version string
	// Missing is what a Robot that wants the kind is told while it is not
	// there.
	Missing error
	// Found says whether the kind is there, and its cache synced.
	Found *Discovery
}

// OptionalAPI is an optional kind's API as discovery watches it: its CRD,
// and the informer to start once the CRD is there.
type OptionalAPI struct {
	Optional
	// Kind names the kind, for the log.
	Kind     string
	Informer cache.SharedIndexInformer
}

// APIs are the optional APIs of the kinds a Robot owns, by CRD: the kinds
// describe them (Kind.Optional), and one mechanism (internal/app) watches
// each CRD, starts the kind's informer once it is there, and answers.
type APIs struct {
	mu    sync.Mutex
	found map[string]*Discovery
	apis  []OptionalAPI
}

// Found returns what says whether the API of crd is there: one Discovery
// per CRD, made at its first call.
func (a *APIs) Found(crd string) *Discovery {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.found == nil {
		a.found = map[string]*Discovery{}
	}
	if a.found[crd] == nil {
		a.found[crd] = &Discovery{}
	}
	return a.found[crd]
}

// watch hands api to discovery, unless its CRD has been handed already.
func (a *APIs) watch(api OptionalAPI) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, known := range a.apis {
		if known.CRD == api.CRD {
			return
		}
	}
	a.apis = append(a.apis, api)
}

// Watched returns the APIs that the kinds handed to discovery.
func (a *APIs) Watched() []OptionalAPI {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]OptionalAPI(nil), a.apis...)
}

// Discovery says whether a kind whose CRD may be missing from the cluster
// (the Gateway API's HTTPRoute) is there, and its informer synced. It is
// watched only once it is: a cluster without it costs nothing.
type Discovery struct {
	mu        sync.Mutex
	available bool
	// answered is whether SetAvailable was called once: until then,
	// "not available" is a guess, not an answer.
	answered bool
	then     []func()
}

// Available reports whether the kind is there, and its cache synced.
func (d *Discovery) Available() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.available
}

// Answered reports whether discovery has said once whether the kind is
// there. Until it has, a Robot that asks for the kind must not be synced:
// it would be told, on a guess, that the cluster has none.
func (d *Discovery) Answered() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.answered
}

// SetAvailable says whether the kind is there (its cache synced). Each
// time it becomes available, what OnAvailable was given runs.
func (d *Discovery) SetAvailable(available bool) {
	d.mu.Lock()
	became := available && !d.available
	d.available = available
	d.answered = true
	then := d.then
	d.mu.Unlock()
	if became {
		for _, f := range then {
			f()
		}
	}
}

// OnAvailable runs f each time the kind becomes available, and at once if
// it is.
func (d *Discovery) OnAvailable(f func()) {
	d.mu.Lock()
	d.then = append(d.then, f)
	available := d.available
	d.mu.Unlock()
	if available {
		f()
	}
}
