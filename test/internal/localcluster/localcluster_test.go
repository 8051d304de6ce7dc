package localcluster

import (
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"testing"
)

func TestEstablished(t *testing.T) {
	for _, tc := range []struct {
		json string
		want bool
	}{
		{`{"status":{}}`, false},
		{`{"status":{"conditions":[{"type":"NamesAccepted","status":"True"}]}}`, false},
		{`{"status":{"conditions":[{"type":"NamesAccepted","status":"True"},{"type":"Established","status":"False"}]}}`, false},
		{`{"status":{"conditions":[{"type":"NamesAccepted","status":"True"},{"type":"Established","status":"True"}]}}`, true},
	} {
		got, err := Established([]byte(tc.json))
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.json, got, err, tc.want)
		}
	}
	if _, err := Established([]byte("not json")); err == nil {
		t.Error("no error for a reply that is not JSON")
	}
}

func TestParseToolsEnv(t *testing.T) {
	got := ParseToolsEnv("KUBECTL=/a/kubectl\nKWOKCTL=/a/kwokctl=x\nnoise\n")
	want := map[string]string{"KUBECTL": "/a/kubectl", "KWOKCTL": "/a/kwokctl=x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestFreeAddrOutsideTheEphemeralRange: a port chosen now for a process
// started later is never one the kernel hands to a bind of port 0 or to an
// outgoing connection meanwhile. An e2e upgrade test stopped the shared
// operator, whose webhook port went back to the kernel, and the previous
// release's metrics server, bound to 127.0.0.1:0, got it: the API server's
// conversions then reached a plain HTTP server.
func TestFreeAddrOutsideTheEphemeralRange(t *testing.T) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral port range to read: %v", err)
	}
	var low, high int
	if _, err := fmt.Sscan(string(data), &low, &high); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		if port >= low && port <= high {
			t.Fatalf("FreeAddr returned %s, in the ephemeral range %d-%d", addr, low, high)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("FreeAddr returned %s, which cannot be listened on: %v", addr, err)
		}
		l.Close()
	}
}
