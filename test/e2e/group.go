//go:build e2e

package e2e

// How the tests share a cluster. Each test says so in its first statement:
//
//   - parallel(t): it runs at the same time as the other parallel tests,
//     against the shared operator. Everything it makes lives in namespaces of
//     its own (newNamespace), or is named after one, and what it reads from
//     the audit log is about those namespaces only.
//   - exclusive(t, why): it runs alone. It stops, pauses or restarts the
//     shared operator, runs operators of its own, changes what every test
//     shares (the Robot CRD, the leader election Lease), or counts the
//     operator's writes on a cluster where nothing else happens.
//
// E2E_GROUP picks the tests a run runs: "parallel" or "exclusive" those of
// one group only (`make e2e` runs the two groups at once, each on a cluster
// and with an operator of its own); unset, all of them: the exclusive ones
// first, one at a time, then the parallel ones together.

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

type group string

const (
	groupParallel  group = "parallel"
	groupExclusive group = "exclusive"
)

// selectedGroup is the group E2E_GROUP names, "" for both.
var selectedGroup = group(os.Getenv("E2E_GROUP"))

// checkSelectedGroup fails on an E2E_GROUP that names no group.
func checkSelectedGroup() error {
	switch selectedGroup {
	case "", groupParallel, groupExclusive:
		return nil
	}
	return fmt.Errorf("E2E_GROUP=%s: want %s, %s, or nothing for both", selectedGroup, groupParallel, groupExclusive)
}

// groups holds, by test name, the group each test that has started said it
// belongs to.
var groups sync.Map

// parallel says that the test runs at the same time as the other parallel
// tests: see above.
func parallel(t *testing.T) {
	t.Helper()
	join(t, groupParallel)
	t.Parallel()
}

// exclusive says that the test runs alone, and why: see above.
func exclusive(t *testing.T, why string) {
	t.Helper()
	if strings.TrimSpace(why) == "" {
		t.Fatal("exclusive: say why the test needs the cluster to itself")
	}
	join(t, groupExclusive)
}

func join(t *testing.T, g group) {
	t.Helper()
	if _, loaded := groups.LoadOrStore(testName(t), g); loaded {
		t.Fatalf("%s says twice how it shares the cluster", testName(t))
	}
	if selectedGroup != "" && selectedGroup != g {
		t.Skipf("in the %s group, which E2E_GROUP=%s runs", g, g)
	}
}

// requireExclusive fails the test unless it said it runs alone: doing is
// what it is about to do, which would disturb the tests running beside it.
func requireExclusive(t *testing.T, doing string) {
	t.Helper()
	if g, _ := groups.Load(testName(t)); g != groupExclusive {
		t.Fatalf("%s %s, which disturbs the tests that run at the same time: it must call exclusive(t, why) first", testName(t), doing)
	}
}

// requireGroup fails the test unless it said how it shares the cluster.
func requireGroup(t *testing.T) {
	t.Helper()
	if _, ok := groups.Load(testName(t)); !ok {
		t.Fatalf("%s does not say how it shares the cluster: its first statement must be parallel(t) or exclusive(t, why)", testName(t))
	}
}

// testName is the name of the top-level test that t is or belongs to.
func testName(t *testing.T) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}
