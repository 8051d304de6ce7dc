package owned

import "sync"

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
