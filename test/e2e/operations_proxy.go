//go:build e2e

package e2e

import (
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// slowAPIServerArgs returns args (an operator command line) with its
// -kubeconfig replaced by a copy whose API server is reached through a TCP
// proxy that delays everything the API server sends by delay. TLS passes
// through untouched, so the credentials stay the same. The proxy stops when
// the test ends.
//
// It makes the operator's startup slow enough to watch from outside: its
// health server listens before its informers have listed anything, and
// stays unready for at least one delay.
func slowAPIServerArgs(t *testing.T, args []string, delay time.Duration) []string {
	t.Helper()
	args = slices.Clone(args)
	index, path := -1, ""
	for i, arg := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		switch {
		case !strings.HasPrefix(arg, "-") || name != "kubeconfig":
		case hasValue:
			index, path = i, value
		case i+1 < len(args):
			index, path = i, args[i+1]
			args = slices.Delete(args, i+1, i+2)
		}
		if index >= 0 {
			break
		}
	}
	if index < 0 || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(strings.TrimLeft(a, "-"), "master") }) {
		t.Fatalf("the shared operator's command line %v has no -kubeconfig, or has -master: cannot route it through a proxy", args)
	}

	config, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	if err := clientcmd.ResolveLocalPaths(config); err != nil {
		t.Fatalf("resolving the paths in %s: %v", path, err)
	}
	for name, cluster := range config.Clusters {
		server, err := url.Parse(cluster.Server)
		if err != nil || server.Host == "" {
			t.Fatalf("cluster %s of %s: server %q is not a URL", name, path, cluster.Server)
		}
		target := server.Host
		if server.Port() == "" {
			port := "443"
			if server.Scheme == "http" {
				port = "80"
			}
			target = net.JoinHostPort(server.Hostname(), port)
		}
		proxy := startLatencyProxy(t, target, delay)
		if cluster.TLSServerName == "" && !cluster.InsecureSkipTLSVerify {
			// The certificate names the real host, not the proxy's.
			cluster.TLSServerName = server.Hostname()
		}
		server.Host = proxy
		cluster.Server = server.String()
	}
	slowPath := filepath.Join(t.TempDir(), "slow-kubeconfig")
	if err := clientcmd.WriteToFile(*config, slowPath); err != nil {
		t.Fatal(err)
	}
	args[index] = "-kubeconfig=" + slowPath
	return args
}

// startLatencyProxy listens on a free loopback port and forwards each
// connection to target, delaying what target sends back by delay (without
// limiting throughput). It returns its address and stops when the test ends.
func startLatencyProxy(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	}
	wg.Go(func() {
		for {
			client, err := listener.Accept()
			if err != nil {
				return
			}
			server, err := net.DialTimeout("tcp", target, 10*time.Second)
			if err != nil {
				client.Close()
				continue
			}
			track(client)
			track(server)
			wg.Go(func() { forward(server, client, 0); server.Close(); client.Close() })
			wg.Go(func() { forward(client, server, delay); server.Close(); client.Close() })
		}
	})
	t.Cleanup(func() {
		listener.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return listener.Addr().String()
}

// forward copies from src to dst, each chunk delay after it was read.
func forward(dst, src net.Conn, delay time.Duration) {
	type chunk struct {
		at   time.Time
		data []byte
	}
	chunks := make(chan chunk, 4096)
	go func() {
		defer close(chunks)
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{time.Now(), slices.Clone(buf[:n])}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.at.Add(delay)))
		if _, err := dst.Write(c.data); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				src.Close()
			}
			// Drain, so the reader is never stuck on a full channel.
			for range chunks {
			}
			return
		}
	}
}
