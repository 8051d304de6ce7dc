package outage

import (
	"errors"
	"sync"
)

// Parked holds the keys whose work failed while the API server was down,
// to hand back, all at once, when it answers again: their failures were
// the outage's, not theirs, so they are not backed off.
type Parked[K comparable] struct {
	gate   *Gate
	resume func(K)
	mu     sync.Mutex
	keys   map[K]struct{}
}

// NewParked returns the keys parked behind gate, each given to resume once
// the gate says the API server answers.
func NewParked[K comparable](gate *Gate, resume func(K)) *Parked[K] {
	p := &Parked[K]{gate: gate, resume: resume, keys: map[K]struct{}{}}
	gate.OnUp(p.Resume)
	return p
}

// Failed reports whether err, a failure of key's work, came from an
// outage: a write the gate did not send, or any failure while the gate says
// the API server is down (a request's failure that looks like an outage is
// confirmed by the gate before the request returns). If so, key is parked.
// If the API server already answers again, it is handed back at once: the
// gate's call to Resume may have come before key was parked.
func (p *Parked[K]) Failed(key K, err error) bool {
	if p == nil || err == nil || !(errors.Is(err, ErrDown) || p.gate.Down()) {
		return false
	}
	p.mu.Lock()
	p.keys[key] = struct{}{}
	p.mu.Unlock()
	if !p.gate.Down() {
		p.Resume()
	}
	return true
}

// Resume hands every parked key back.
func (p *Parked[K]) Resume() {
	p.mu.Lock()
	keys := p.keys
	p.keys = map[K]struct{}{}
	p.mu.Unlock()
	for key := range keys {
		p.resume(key)
	}
}

// Len returns how many keys are parked.
func (p *Parked[K]) Len() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.keys)
}
