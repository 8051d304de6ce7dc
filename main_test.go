package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunRejectsBadFlagsInOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"-no-such-flag"},
		{"-workers", "0"},
		{"-kube-api-qps", "-1"},
		{"-sync-timeout", "0"},
		{"-sync-timeout=-1s"},
		{"-logging-format", "yaml"},
		{"-metrics-secure=false", "-metrics-cert-dir=/tmp"},
		{"-leader-elect", "-leader-elect-renew-deadline", "20s"},
		{"extra-argument"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code != 2 {
			t.Errorf("%v: exit code %d, want 2", args, code)
		}
		if lines := strings.Count(stderr.String(), "\n"); lines != 1 || !strings.HasPrefix(stderr.String(), "robot-operator: ") {
			t.Errorf("%v: stderr %q, want one line starting with robot-operator:", args, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: printed %q on stdout", args, stdout.String())
		}
	}
}

func TestRunWithoutACluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-metrics-bind-address=0", "-health-probe-bind-address=0"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "robot-operator: no cluster to connect to: pass -kubeconfig or -master") {
		t.Errorf("exit code %d, stderr %q; want 1 and a message saying how to point at a cluster", code, stderr.String())
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-help"}, &stdout, &stderr); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	for _, flag := range []string{"-kubeconfig", "-workers", "-sync-timeout", "-leader-elect", "-metrics-bind-address", "-logging-format"} {
		if !strings.Contains(stdout.String(), flag) {
			t.Errorf("usage does not mention %s", flag)
		}
	}
}

func TestVersion(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v1.2.3-4-gabcdef0"
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-version"}, &stdout, &stderr); code != 0 || stdout.String() != version+"\n" || stderr.Len() != 0 {
		t.Errorf("exit code %d, stdout %q, stderr %q; want 0 and the version alone", code, stdout.String(), stderr.String())
	}
}
