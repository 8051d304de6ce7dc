/*
Copyright 2026 The robot-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package outage

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

const (
	// ProbeInterval is how often the Gate asks the API server whether it
	// is ready while it is down: the most the operator asks of a server
	// that does not answer, and the most it learns late of its return.
	ProbeInterval = 500 * time.Millisecond
	// ProbeTimeout bounds one probe: a server that takes longer to say it
	// is ready counts as down.
	ProbeTimeout = 2 * time.Second
)

// ErrDown is the error of a write the Gate did not send because the API
// server was down.
var ErrDown = errors.New("the API server is not answering: waiting for it to come back")

// Probe asks the API server whether it serves requests. It returns nil
// when it does.
type Probe func(ctx context.Context) error

// ReadyzProbe is a Probe that asks client's API server for /readyz. An
// answer that refuses the operator (401, 403) or does not know the path
// (404) still comes from a server that answers: only no answer, or a
// server that says it is not ready (5xx), counts as down.
func ReadyzProbe(client rest.Interface) Probe {
	return func(ctx context.Context) error {
		err := client.Get().AbsPath("/readyz").Do(ctx).Error()
		if err == nil || apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
}

// Gate knows whether the API server is down. Its zero value is not usable:
// make one with New.
type Gate struct {
	ctx      context.Context
	probe    Probe
	interval time.Duration

	mu sync.Mutex
	// up is closed while the API server answers; a new, open one is made
	// when it goes down.
	up   chan struct{}
	down time.Time
	// checking is closed when the probe that confirms an outage ends; nil
	// when none runs.
	checking chan struct{}
	// answered is when a probe last found the API server ready: failures
	// within an interval of it are the requests' own, not an outage's, and
	// cost no probe, so that a server that throttles or fails requests of
	// its own gets at most one probe an interval.
	answered time.Time
	onUp     []func()
}

// New returns a Gate that asks probe, every interval while the API server
// is down, whether it is back. ctx bounds the Gate's probing.
func New(ctx context.Context, probe Probe, interval time.Duration) *Gate {
	up := make(chan struct{})
	close(up)
	return &Gate{ctx: ctx, probe: probe, interval: interval, up: up}
}

// OnUp makes the Gate call f, in a goroutine of its own, each time the API
// server answers again after an outage.
func (g *Gate) OnUp(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.onUp = append(g.onUp, f)
}

// Down reports whether the API server is down, as far as the Gate knows.
func (g *Gate) Down() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.down.IsZero()
}

// Wait returns nil once the API server answers, at once if it does now, or
// ctx's error if ctx ends first.
func (g *Gate) Wait(ctx context.Context) error {
	g.mu.Lock()
	up := g.up
	g.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// confirmDown asks the API server whether it is ready, after a request
// failed in a way an outage would explain, and reports whether it is down.
// Requests that fail at once share one probe.
func (g *Gate) confirmDown(ctx context.Context) bool {
	g.mu.Lock()
	if !g.down.IsZero() {
		g.mu.Unlock()
		return true
	}
	if time.Since(g.answered) < g.interval {
		g.mu.Unlock()
		return false
	}
	checking := g.checking
	if checking == nil {
		checking = make(chan struct{})
		g.checking = checking
		g.mu.Unlock()
		err := g.ask()
		g.mu.Lock()
		switch {
		case err == nil:
			g.answered = time.Now()
		case g.down.IsZero():
			g.goDown(err)
		}
		g.checking = nil
		close(checking)
		down := !g.down.IsZero()
		g.mu.Unlock()
		return down
	}
	g.mu.Unlock()
	select {
	case <-checking:
	case <-ctx.Done():
	}
	return g.Down()
}

// ask runs one probe, within ProbeTimeout.
func (g *Gate) ask() error {
	ctx, cancel := context.WithTimeout(g.ctx, ProbeTimeout)
	defer cancel()
	return g.probe(ctx)
}

// goDown marks the API server down and starts probing for its return. g.mu
// is held.
func (g *Gate) goDown(cause error) {
	g.down = time.Now()
	g.up = make(chan struct{})
	klog.FromContext(g.ctx).Info("The API server is not answering: holding requests until it does", "err", cause, "probeInterval", g.interval)
	go g.waitForReturn()
}

// waitForReturn probes every interval until the API server answers, then
// lets the requests that wait go and tells those who asked.
func (g *Gate) waitForReturn() {
	ticker := time.NewTicker(g.interval)
	defer ticker.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-ticker.C:
		}
		if err := g.ask(); err != nil {
			continue
		}
		g.mu.Lock()
		klog.FromContext(g.ctx).Info("The API server answers again", "down", time.Since(g.down).Round(time.Millisecond))
		g.down, g.answered = time.Time{}, time.Now()
		close(g.up)
		onUp := g.onUp
		g.mu.Unlock()
		for _, f := range onUp {
			go f()
		}
		return
	}
}

// Wrap returns a RoundTripper for rest.Config.Wrap that sends requests
// through next as the Gate allows. While the API server is down, a read
// (GET) waits until it answers and a write fails at once with ErrDown,
// unsent. A read that fails as an outage would (no answer, or 429, 500,
// 502, 503, 504: an API server whose storage is down, or whose watch cache
// starts again) while the probe confirms the outage is sent again once the API
// server answers; the caller, a reflector or a sync, sees a slow read, not
// an error to back off from. A write that fails so is not sent again:
// whether it took effect is unknown, and the sync that sent it decides.
func (g *Gate) Wrap(next http.RoundTripper) http.RoundTripper {
	return &transport{gate: g, next: next}
}

type transport struct {
	gate *Gate
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	read := req.Method == http.MethodGet && (req.Body == nil || req.Body == http.NoBody)
	for {
		if t.gate.Down() {
			if !read {
				return nil, ErrDown
			}
			if err := t.gate.Wait(req.Context()); err != nil {
				return nil, err
			}
		}
		resp, err := t.next.RoundTrip(req)
		if !outageLike(resp, err) || req.Context().Err() != nil || !t.gate.confirmDown(req.Context()) || !read {
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
	}
}

// WrappedRoundTripper lets client-go see the transport underneath.
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.next }

// outageLike reports whether a request's result is what an API server that
// is down, or whose storage is, gives.
func outageLike(resp *http.Response, err error) bool {
	if err != nil {
		return true
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
