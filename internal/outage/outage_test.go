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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// server stands in for the API server and its transport: while down, it
// refuses every request and every probe, as a dead process's port does.
type server struct {
	down     atomic.Bool
	status   atomic.Int32 // the status of the answers while up; 200 if unset
	requests atomic.Int32 // requests that reached it, probes aside
	probes   atomic.Int32
}

var errRefused = syscall.ECONNREFUSED

func (s *server) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.down.Load() {
		return nil, errRefused
	}
	s.requests.Add(1)
	code := int(s.status.Load())
	if code == 0 {
		code = http.StatusOK
	}
	return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

func (s *server) probe(context.Context) error {
	s.probes.Add(1)
	if s.down.Load() {
		return errRefused
	}
	return nil
}

func newGate(t *testing.T, s *server, interval time.Duration) (*Gate, http.RoundTripper) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g := New(ctx, s.probe, interval)
	return g, g.Wrap(s)
}

func get(t *testing.T, rt http.RoundTripper, ctx context.Context) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://apiserver/api/v1/pods", nil)
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

func post(t *testing.T, rt http.RoundTripper) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://apiserver/api/v1/namespaces/a/events", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

// TestReadWaitsOutAnOutage: a read sent while the API server is down
// returns no error: it is sent again once the probe finds the server back,
// and the caller (a reflector) has nothing to back off from.
func TestReadWaitsOutAnOutage(t *testing.T) {
	s := &server{}
	s.down.Store(true)
	g, rt := newGate(t, s, 10*time.Millisecond)
	var up atomic.Int32
	g.OnUp(func() { up.Add(1) })

	done := make(chan error, 1)
	go func() {
		resp, err := get(t, rt, context.Background())
		if err == nil && resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status)
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the read returned while the API server was down: %v", err)
	default:
	}
	if !g.Down() {
		t.Fatal("the Gate does not know the API server is down")
	}
	s.down.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the read failed after the API server came back: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read still waits 5 s after the API server came back")
	}
	if g.Down() {
		t.Error("the Gate still says down")
	}
	deadline := time.Now().Add(5 * time.Second)
	for up.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := up.Load(); n != 1 {
		t.Errorf("OnUp ran %d times, want once", n)
	}
}

// TestWriteFailsAtOnceWhileDown: a write is not held (it could land after
// this replica lost its Lease) nor sent: it fails at once with ErrDown.
func TestWriteFailsAtOnceWhileDown(t *testing.T) {
	s := &server{}
	s.down.Store(true)
	g, rt := newGate(t, s, time.Hour)
	if _, err := get(t, rt, canceledAfter(t, 50*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read while down with a deadline: %v, want the deadline's error", err)
	}
	if !g.Down() {
		t.Fatal("the Gate does not know the API server is down")
	}
	before := s.requests.Load()
	start := time.Now()
	if _, err := post(t, rt); !errors.Is(err, ErrDown) {
		t.Errorf("a write while down: %v, want ErrDown", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the write took %v to fail", took)
	}
	if s.requests.Load() != before {
		t.Error("the write was sent")
	}
}

// TestWriteThatFailsIsNotSentAgain: a write that the outage failed is
// reported, not retried: whether it took effect is for the sync to find.
func TestWriteThatFailsIsNotSentAgain(t *testing.T) {
	s := &server{}
	g, rt := newGate(t, s, time.Hour)
	s.down.Store(true)
	if _, err := post(t, rt); !errors.Is(err, errRefused) {
		t.Errorf("a write the outage failed: %v, want the refusal", err)
	}
	if !g.Down() {
		t.Error("the Gate does not know the API server is down after a refused write")
	}
}

// TestServerErrorOfAReadyServerIsReturned: a 500 from an API server whose
// /readyz answers is the request's own answer, returned as it is and not
// retried.
func TestServerErrorOfAReadyServerIsReturned(t *testing.T) {
	s := &server{}
	s.status.Store(http.StatusInternalServerError)
	g, rt := newGate(t, s, time.Hour)
	resp, err := get(t, rt, context.Background())
	if err != nil || resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("got %v, %v; want the 500", resp, err)
	}
	if n := s.requests.Load(); n != 1 {
		t.Errorf("the read was sent %d times, want once", n)
	}
	if g.Down() {
		t.Error("the Gate says down while /readyz answers")
	}
}

// TestProbesWhileDownAreBounded: however many requests wait, the Gate asks
// the down API server once per interval, and failures at once share a
// probe.
func TestProbesWhileDownAreBounded(t *testing.T) {
	s := &server{}
	s.down.Store(true)
	const interval = 20 * time.Millisecond
	_, rt := newGate(t, s, interval)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { _, _ = get(t, rt, ctx) })
	}
	const window = 500 * time.Millisecond
	time.Sleep(window)
	probes := s.probes.Load()
	cancel()
	wg.Wait()
	if max := int32(window/interval) + 3; probes > max {
		t.Errorf("%d probes in %v with 100 requests waiting, want at most %d (one per %v)", probes, window, max, interval)
	}
	if probes < 5 {
		t.Errorf("%d probes in %v: the Gate does not look for the API server's return", probes, window)
	}
}

// canceledAfter returns a context that ends after d.
func canceledAfter(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestFailuresOfAReadyServerCostOneProbeAnInterval: a server that answers
// /readyz but fails or throttles requests of its own is asked at most once
// an interval, however many requests fail.
func TestFailuresOfAReadyServerCostOneProbeAnInterval(t *testing.T) {
	s := &server{}
	s.status.Store(http.StatusTooManyRequests)
	_, rt := newGate(t, s, time.Hour)
	for range 50 {
		resp, err := get(t, rt, context.Background())
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("got %v, %v; want the 429 as it is", resp, err)
		}
	}
	if n := s.probes.Load(); n != 1 {
		t.Errorf("%d probes for 50 throttled requests within an interval, want 1", n)
	}
}
