//go:build e2e

package e2e

import (
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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
	args, index, path, config := kubeconfigArg(t, args)
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

// kubeconfigArg returns a copy of args (an operator command line) with its
// -kubeconfig flag as one argument at index, the path it names, and the
// kubeconfig there, its paths made absolute. It fails the test if there is
// no -kubeconfig, or a -master that would override it.
func kubeconfigArg(t *testing.T, args []string) (_ []string, index int, path string, _ *clientcmdapi.Config) {
	t.Helper()
	args = slices.Clone(args)
	index = -1
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
	return args, index, path, config
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

// holdingAPIServerArgs returns args (an operator command line) with its
// -kubeconfig replaced by a copy whose API server, that of its current
// context, is reached through a holdingProxy, and that proxy. The proxy
// stops when the test ends.
func holdingAPIServerArgs(t *testing.T, args []string) ([]string, *holdingProxy) {
	t.Helper()
	args, index, path, config := kubeconfigArg(t, args)
	upstream, err := clientcmd.NewDefaultClientConfig(*config, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil || target.Host == "" {
		t.Fatalf("%s: server %q is not a URL", path, upstream.Host)
	}
	// The proxy sends each request on with the kubeconfig's credentials
	// (the bearer token the operator sends comes along anyway), trusting
	// the API server's CA.
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatalf("a transport to %s: %v", upstream.Host, err)
	}
	p := &holdingProxy{forward: &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport,
		// Watches stream: pass every event on as it comes.
		FlushInterval: -1,
		// A request the operator gave up on is no news.
		ErrorLog: log.New(io.Discard, "", 0),
	}}
	server := httptest.NewUnstartedServer(p)
	server.EnableHTTP2 = true
	server.StartTLS()
	t.Cleanup(func() {
		p.release()
		server.CloseClientConnections()
		server.Close()
	})

	current := config.Contexts[config.CurrentContext]
	if current == nil || config.Clusters[current.Cluster] == nil {
		t.Fatalf("%s: no cluster for the current context %q", path, config.CurrentContext)
	}
	cluster := config.Clusters[current.Cluster]
	cluster.Server = server.URL
	cluster.CertificateAuthority = ""
	cluster.CertificateAuthorityData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	cluster.TLSServerName = ""
	cluster.InsecureSkipTLSVerify = false
	holdingPath := filepath.Join(t.TempDir(), "holding-kubeconfig")
	if err := clientcmd.WriteToFile(*config, holdingPath); err != nil {
		t.Fatal(err)
	}
	args[index] = "-kubeconfig=" + holdingPath
	return args, p
}

// holdingProxy passes HTTP requests on to the API server, but for those it
// is told to hold: it answers them nothing, until the client gives up on
// one (its context ends: HTTP/2 resets the stream) or the proxy is told to
// release them.
//
// Why HTTP, when slowAPIServerArgs delays at the TCP level: client-go sends
// all of a process's requests (the informers' watches, the syncs' reads
// and writes, Events) over one HTTP/2 connection. A TCP proxy cannot tell
// them apart in it, TLS and all: stop forwarding that connection's
// responses, and the watch event that would start the sync under test is
// held too; hold only the connections opened from then on, and nothing is
// held, as none is opened. Either way what happens depends on client-go's
// connection handling (it pings a connection silent for 30 s, drops it 15
// s later, reconnects and lists again), not on the operator. So this proxy
// terminates TLS, with the certificate of an httptest server that the
// kubeconfig copy trusts instead of the API server's CA, and forwards each
// request over a client-go transport of its own, built from the original
// kubeconfig: it sees each request, and holds exactly those asked for, for
// as long as asked, while every other request, watches included, passes at
// once. The operator still speaks HTTP/2 to it.
type holdingProxy struct {
	forward http.Handler

	mu       sync.Mutex
	match    func(*http.Request) bool // the requests to hold; nil: none
	released chan struct{}            // closed when the requests held so far may pass
	held     []heldRequest
	seen     []string // every request, as "METHOD path"
}

// heldRequest is a request the proxy held.
type heldRequest struct {
	proto, method, path string
	arrived, ended      time.Time
	// gaveUp: the client gave up on it (else the proxy released it and
	// passed it on).
	gaveUp bool
}

func (r heldRequest) String() string {
	end := "still held"
	switch {
	case r.ended.IsZero():
	case r.gaveUp:
		end = fmt.Sprintf("cancelled by the client after %v", r.ended.Sub(r.arrived).Round(time.Millisecond))
	default:
		end = fmt.Sprintf("released after %v", r.ended.Sub(r.arrived).Round(time.Millisecond))
	}
	return fmt.Sprintf("%s %s (%s) at %s: %s", r.method, r.path, r.proto, r.arrived.Format("15:04:05.000"), end)
}

// hold makes the proxy hold, from now until release, every request that
// match accepts.
func (p *holdingProxy) hold(match func(*http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.match, p.released = match, make(chan struct{})
}

// release passes the requests held on to the API server, and holds no more.
func (p *holdingProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.match != nil {
		close(p.released)
	}
	p.match = nil
}

// heldRequests returns the requests held so far.
func (p *holdingProxy) heldRequests() []heldRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.held)
}

// requests returns every request the proxy has seen so far, held or not, as
// "METHOD path".
func (p *holdingProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

func (p *holdingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.seen = append(p.seen, r.Method+" "+r.URL.Path)
	match, released, i := p.match, p.released, len(p.held)
	hold := match != nil && match(r)
	if hold {
		p.held = append(p.held, heldRequest{proto: r.Proto, method: r.Method, path: r.URL.Path, arrived: time.Now()})
	}
	p.mu.Unlock()
	if hold {
		gaveUp := false
		select {
		case <-r.Context().Done():
			gaveUp = true
		case <-released:
		}
		p.mu.Lock()
		p.held[i].ended, p.held[i].gaveUp = time.Now(), gaveUp
		p.mu.Unlock()
		if gaveUp {
			return
		}
	}
	p.forward.ServeHTTP(w, r)
}

// cutProxy is a TCP proxy to the API server that can be cut off as an
// outage would: cut closes every connection through it and its listener, so
// that the operator's connections are refused, as they are while the API
// server is down; restore listens on the same address again.
type cutProxy struct {
	t      *testing.T
	target string
	addr   string

	mu       sync.Mutex
	listener net.Listener
	conns    []net.Conn
	wg       sync.WaitGroup
}

// cuttableAPIServerArgs returns args (an operator command line) with its
// -kubeconfig replaced by a copy whose API servers are reached through a
// cutProxy, and that proxy. The proxy stops when the test ends.
func cuttableAPIServerArgs(t *testing.T, args []string) ([]string, *cutProxy) {
	t.Helper()
	args, index, _, config := kubeconfigArg(t, args)
	var proxy *cutProxy
	for name, cluster := range config.Clusters {
		server, err := url.Parse(cluster.Server)
		if err != nil || server.Host == "" || server.Port() == "" {
			t.Fatalf("cluster %s: server %q is not a URL with a port", name, cluster.Server)
		}
		if proxy != nil {
			t.Fatalf("the kubeconfig names more than one cluster: cannot cut them with one proxy")
		}
		proxy = &cutProxy{t: t, target: server.Host}
		proxy.listen("127.0.0.1:0")
		if cluster.TLSServerName == "" && !cluster.InsecureSkipTLSVerify {
			cluster.TLSServerName = server.Hostname()
		}
		server.Host = proxy.addr
		cluster.Server = server.String()
	}
	t.Cleanup(proxy.cut)
	path := filepath.Join(t.TempDir(), "cuttable-kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	args[index] = "-kubeconfig=" + path
	return args, proxy
}

// listen starts accepting connections on addr.
func (p *cutProxy) listen(addr string) {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatalf("proxy listening on %s: %v", addr, err)
	}
	p.mu.Lock()
	p.listener, p.addr = listener, listener.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			client, err := listener.Accept()
			if err != nil {
				return
			}
			server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(server, client); server.Close(); client.Close() })
			p.wg.Go(func() { _, _ = io.Copy(client, server); server.Close(); client.Close() })
		}
	})
}

// cut closes the listener and every connection, and waits until nothing
// is forwarded any more.
func (p *cutProxy) cut() {
	p.mu.Lock()
	if p.listener != nil {
		p.listener.Close()
		p.listener = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// restore accepts connections again, on the address the operator knows.
func (p *cutProxy) restore() {
	p.listen(p.addr)
}
