package serving

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/robot-operator/robot-operator/internal/conversion"
)

// dialFrom returns an HTTP client whose connections leave from the
// loopback address ip, so that a test can play several hosts.
func dialFrom(ip string, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: timeout}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}}
}

// holdSlowBody keeps one connection from ip to addr that sends a review's
// headers with a Content-Length of 4 MB, then a byte every 200ms, and
// opens another whenever the server cuts it off, until stop closes. Each
// connection's life is sent on lives.
func holdSlowBody(addr, ip string, stop <-chan struct{}, lives chan<- time.Duration) {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	for {
		select {
		case <-stop:
			return
		default:
		}
		conn, err := dialer.Dial("tcp", addr)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		start := time.Now()
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			_, _ = io.Copy(io.Discard, conn) // until the server closes
		}()
		_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 4000000\r\n\r\n{", conversion.Path)
		for err == nil {
			select {
			case <-stop:
				_ = conn.Close()
				<-closed
				return
			case <-closed:
				err = io.EOF
			case <-time.After(200 * time.Millisecond):
				_, err = conn.Write([]byte(" "))
			}
		}
		_ = conn.Close()
		<-closed
		select {
		case lives <- time.Since(start):
		default:
		}
	}
}

// TestWebhookSlowBodiesHoldNoSlot: 40 connections from one host that send
// their body a byte at a time (the way to hold a slot for the server's
// whole ReadTimeout when a slot is taken before the body is read) neither
// hold the reviews' slots nor every connection the webhook reads from, so
// another host's reviews, sent whole at once as the API server sends
// them, are all answered at once; and a slow body is cut off well before
// the server's ReadTimeout.
func TestWebhookSlowBodiesHoldNoSlot(t *testing.T) {
	var converted atomic.Int32
	convert := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		converted.Add(1)
		fmt.Fprintln(w, "{}")
	})
	server, err := Serve(ktesting.NewLogger(t, ktesting.DefaultConfig), "conversion webhook", "127.0.0.1:0", WebhookHandler(convert), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	stop := make(chan struct{})
	lives := make(chan time.Duration, 100000)
	var holders sync.WaitGroup
	for range 40 {
		holders.Go(func() { holdSlowBody(server.Addr, "127.0.0.3", stop, lives) })
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			holders.Wait()
		}
	}()
	time.Sleep(time.Second) // every holder has sent its headers

	apiServer := dialFrom("127.0.0.2", 5*time.Second)
	failed := 0
	for i := range 10 {
		start := time.Now()
		response, err := apiServer.Post("http://"+server.Addr+conversion.Path, "application/json", bytes.NewReader([]byte(`{"kind":"ConversionReview"}`)))
		if err != nil {
			t.Errorf("review %d from another host, during the slow bodies: %v", i+1, err)
			failed++
			continue
		}
		body, _ := io.ReadAll(response.Body)
		_ = response.Body.Close()
		if took := time.Since(start); response.StatusCode != http.StatusOK || took > 2*time.Second {
			t.Errorf("review %d from another host, during the slow bodies: status %d after %v (%s), want 200 within 2s", i+1, response.StatusCode, took.Round(time.Millisecond), strings.TrimSpace(string(body)))
			failed++
		}
		time.Sleep(300 * time.Millisecond)
	}
	if failed > 0 {
		t.Errorf("%d of 10 reviews from another host failed while one host held 40 slow bodies", failed)
	}

	// The slow bodies are cut off by a deadline of their own, well before
	// the server's ReadTimeout: none lived longer while the reviews above
	// were sent (over 10s).
	close(stop)
	holders.Wait()
	close(lives)
	cutOff := DefaultLimits.ReadTimeout / 2
	var longest time.Duration
	n := 0
	for life := range lives {
		longest = max(longest, life)
		n++
	}
	if n == 0 {
		t.Errorf("no slow body was cut off by the server in over 10s")
	}
	if longest > cutOff {
		t.Errorf("a slow body was cut off after %v, want within %v (the server's ReadTimeout is %v)", longest.Round(time.Millisecond), cutOff, DefaultLimits.ReadTimeout)
	}
}

// TestReviewGateBounds: the webhook holds at most MaxOpenReviews requests,
// and at most MaxOpenReviewsPerHost from one address, so the bodies it
// holds are bounded whoever sends them; a place freed is taken again.
func TestReviewGateBounds(t *testing.T) {
	gate := newReviewGate(MaxOpenReviews, MaxOpenReviewsPerHost)
	for i := range MaxOpenReviewsPerHost {
		if !gate.enter("10.0.0.1") {
			t.Fatalf("request %d from one host refused, want up to %d admitted", i+1, MaxOpenReviewsPerHost)
		}
	}
	if gate.enter("10.0.0.1") {
		t.Errorf("request %d from one host admitted, want at most %d", MaxOpenReviewsPerHost+1, MaxOpenReviewsPerHost)
	}
	for i := range MaxOpenReviews - MaxOpenReviewsPerHost {
		if !gate.enter(fmt.Sprintf("10.0.1.%d", i)) {
			t.Fatalf("a request from another host refused with %d open, want up to %d", MaxOpenReviewsPerHost+i, MaxOpenReviews)
		}
	}
	if gate.enter("10.0.2.1") {
		t.Errorf("a request admitted with %d open, want at most %d", MaxOpenReviews, MaxOpenReviews)
	}
	gate.leave("10.0.0.1")
	if !gate.enter("10.0.2.1") {
		t.Errorf("a request refused once a place was freed")
	}
}
