package serving

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// quickLimits is a handler that asks Serve for limits short enough to
// watch in a test.
type quickLimits struct{ http.Handler }

func (quickLimits) Limits() Limits {
	return Limits{
		ReadHeaderTimeout: 500 * time.Millisecond,
		ReadTimeout:       time.Second,
		WriteTimeout:      2 * time.Second,
		IdleTimeout:       time.Second,
		MaxHeaderBytes:    4 << 10,
	}
}

// readsBody reads the whole body before it answers, as the webhook does.
var readsBody = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintln(w, "ok")
})

// serveQuick starts Serve on a loopback port with quickLimits and returns
// its address.
func serveQuick(t *testing.T) string {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.DefaultConfig)
	server, err := Serve(logger, "test", "127.0.0.1:0", quickLimits{readsBody}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return server.Addr
}

// closedWithin reports whether the server closes conn within d: a read
// that ends (EOF, reset) rather than times out on the test's own deadline.
// Whatever the server answers before closing is read and dropped.
func closedWithin(t *testing.T, conn net.Conn, d time.Duration) bool {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	_, err := io.Copy(io.Discard, conn)
	var netErr net.Error
	return !(errors.As(err, &netErr) && netErr.Timeout())
}

// drip writes s to conn a byte every interval until s is written or a
// write fails.
func drip(conn net.Conn, s string, interval time.Duration) {
	for i := range len(s) {
		if _, err := conn.Write([]byte{s[i]}); err != nil {
			return
		}
		time.Sleep(interval)
	}
}

// TestServeClosesSlowClients: a client that sends its headers or its body
// a byte at a time, or keeps an idle connection open after a request, is
// cut off within the server's limits, so connections cannot be held open
// with a trickle of bytes.
func TestServeClosesSlowClients(t *testing.T) {
	t.Run("headers a byte at a time", func(t *testing.T) {
		t.Parallel()
		conn := dial(t, serveQuick(t))
		go drip(conn, "GET / HTTP/1.1\r\nHost: test\r\nX-Slow: "+strings.Repeat("a", 100), 200*time.Millisecond)
		if !closedWithin(t, conn, 3*time.Second) {
			t.Error("a client sending its headers a byte every 200ms was still connected after 3s; ReadHeaderTimeout is 500ms")
		}
	})
	t.Run("body a byte at a time", func(t *testing.T) {
		t.Parallel()
		conn := dial(t, serveQuick(t))
		if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		go drip(conn, strings.Repeat("a", 1000), 200*time.Millisecond)
		if !closedWithin(t, conn, 3*time.Second) {
			t.Error("a client sending its body a byte every 200ms was still connected after 3s; ReadTimeout is 1s")
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		t.Parallel()
		conn := dial(t, serveQuick(t))
		if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		response, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = response.Body.Close()
		if response.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", response.StatusCode)
		}
		if !closedWithin(t, conn, 3*time.Second) {
			t.Error("an idle keep-alive connection was still open after 3s; IdleTimeout is 1s")
		}
	})
	t.Run("large headers", func(t *testing.T) {
		t.Parallel()
		conn := dial(t, serveQuick(t))
		if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: test\r\nX-Large: "+strings.Repeat("a", 64<<10)+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		response, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = response.Body.Close()
		if response.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("64 KiB of headers: status %d, want 431 (MaxHeaderBytes is 4 KiB)", response.StatusCode)
		}
	})
}

// TestServeDefaultLimits: a handler that asks for nothing gets every limit.
func TestServeDefaultLimits(t *testing.T) {
	server, err := Serve(ktesting.NewLogger(t, ktesting.DefaultConfig), "test", "127.0.0.1:0", readsBody, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if server.ReadHeaderTimeout <= 0 || server.ReadTimeout <= 0 || server.WriteTimeout <= 0 || server.IdleTimeout <= 0 || server.MaxHeaderBytes <= 0 {
		t.Errorf("server limits: ReadHeaderTimeout %s, ReadTimeout %s, WriteTimeout %s, IdleTimeout %s, MaxHeaderBytes %d; want all set",
			server.ReadHeaderTimeout, server.ReadTimeout, server.WriteTimeout, server.IdleTimeout, server.MaxHeaderBytes)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestProfileOutlastsWriteTimeout: a CPU profile longer than the server's
// WriteTimeout is still delivered, so the pprof server needs no limits of
// its own.
func TestProfileOutlastsWriteTimeout(t *testing.T) {
	server, err := Serve(ktesting.NewLogger(t, ktesting.DefaultConfig), "pprof", "127.0.0.1:0", quickLimits{ProfileHandler()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	response, err := client.Get("http://" + server.Addr + "/debug/pprof/profile?seconds=3")
	if err != nil {
		t.Fatalf("a 3-second profile with a WriteTimeout of 2s: %v", err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil || response.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("a 3-second profile with a WriteTimeout of 2s: status %d, %d bytes, %v", response.StatusCode, len(body), err)
	}
}
