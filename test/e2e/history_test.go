//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestHistoryKeepsEachSpec: a Robot changed 3 times has 4 ControllerRevisions
// it controls, numbered in the order of its specs and holding them; a
// converged Robot writes none; deleting the Robot deletes them (garbage
// collection). The limit's pruning is unit-tested (internal/owned,
// TestHistory): the shared operator runs with the default limit.
func TestHistoryKeepsEachSpec(t *testing.T) {
	parallel(t)
	if env.audit.err != nil {
		t.Fatalf("this test counts the operator's writes in the API server's audit log: %v", env.audit.err)
	}
	ns := newNamespace(t)
	start := time.Now()
	robot := createRobot(t, newRobot(ns, "web", 1))
	waitForHistory(t, ns, "web", 1)
	type spec struct {
		replicas int32
		image    string
	}
	want := []spec{{1, image1}}
	for _, change := range []struct {
		patch string
		spec  spec
	}{
		{`{"spec":{"replicas":2}}`, spec{2, image1}},
		{`{"spec":{"replicas":3}}`, spec{3, image1}},
		{`{"spec":{"image":"` + image2 + `"}}`, spec{3, image2}},
	} {
		patchRobot(t, ns, "web", change.patch)
		want = append(want, change.spec)
		waitForHistory(t, ns, "web", len(want))
	}
	waitForRobot(t, ns, "web", convergeTimeout, "is Ready, its rollout reported complete", robotSettled)

	revisions := waitForHistory(t, ns, "web", len(want))
	for i, revision := range revisions {
		var got robotv1beta1.RobotSpec
		if err := json.Unmarshal(revision.Data.Raw, &got); err != nil {
			t.Fatalf("revision %s: %v", revision.Name, err)
		}
		if revision.Revision != int64(i+1) || ptr.Deref(got.Replicas, 1) != want[i].replicas || got.Image != want[i].image {
			t.Errorf("revision %s is number %d with %d x %s, want number %d with %d x %s",
				revision.Name, revision.Revision, ptr.Deref(got.Replicas, 1), got.Image, i+1, want[i].replicas, want[i].image)
		}
		if !metav1.IsControlledBy(&revision, robot) {
			t.Errorf("revision %s is controlled by %s, not the Robot", revision.Name, describeOwner(metav1.GetControllerOf(&revision)))
		}
	}

	// Each spec was created once, and nothing else was written.
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, Namespace: ns, Resource: "controllerrevisions", After: start})
	if err != nil {
		t.Fatal(err)
	}
	var done []string
	for _, w := range writes {
		if w.Verb != "get" && w.Verb != "list" && w.Verb != "watch" && w.code() < 300 {
			done = append(done, w.Verb)
		}
	}
	if fmt.Sprint(done) != "[create create create create]" {
		t.Errorf("the operator wrote the revisions %v, want 4 creates:\n%s", done, writesText(writes))
	}

	// Converged, the Robot's history costs nothing.
	const quiet = 3 * time.Second
	settled := time.Now()
	time.Sleep(quiet)
	writes, err = env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, Namespace: ns, After: settled})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(writes, func(w auditEvent) bool { return w.Verb != "get" && w.Verb != "list" && w.Verb != "watch" }) {
		t.Errorf("the converged Robot cost writes:\n%s", writesText(writes))
	}

	if err := env.robots.RobotV1beta1().Robots(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Robot %s/web: %v", ns, err)
	}
	eventually(t, convergeTimeout, "the Robot's revisions are gone", func(ctx context.Context) (bool, string, error) {
		list, err := env.kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		return len(list.Items) == 0, fmt.Sprintf("%d revisions", len(list.Items)), nil
	})
}

// TestHistoryNamesTheBrokenChange: a Ready Robot remembers its revision as
// the last Ready one; a change whose image cannot be pulled, with an
// environment variable added, makes Ready's message name both since that
// revision, with one write to the history (the new spec's); put back, the
// Robot is Ready again with the first spec, renumbered, remembered.
func TestHistoryNamesTheBrokenChange(t *testing.T) {
	parallel(t)
	if env.audit.err != nil {
		t.Fatalf("this test counts the operator's writes in the API server's audit log: %v", env.audit.err)
	}
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	first := waitForHistory(t, ns, "web", 1)[0]
	robot := waitForRobot(t, ns, "web", convergeTimeout, "is Ready, revision 1 remembered", func(r *robotv1beta1.Robot) bool {
		last := r.Status.LastReadyRevision
		return robotSettled(r) && last != nil && last.Name == first.Name && last.Revision == 1
	})
	readyAt := robot.Status.LastReadyRevision.ReadyTime.UTC().Format("2006-01-02 15:04 MST")

	start := time.Now()
	patchRobot(t, ns, "web", fmt.Sprintf(`{"spec":{"image":%q,"env":[{"name":"LOG_LEVEL","value":"debug"}]}}`, pullFailsImage))
	waitForHistory(t, ns, "web", 2)
	broken := expectCause(t, ns, "web", robotv1beta1.ReasonImagePullFailed, start,
		"; since revision 1, Ready at "+readyAt+": image "+image1+" → "+pullFailsImage+"; env LOG_LEVEL added")
	if last := broken.Status.LastReadyRevision; last == nil || last.Name != first.Name || last.Revision != 1 {
		t.Errorf("the broken Robot remembers %+v as its last Ready revision, want %s, number 1", last, first.Name)
	}

	// The broken spec's revision was the one write of the history: the
	// message's reading of the last Ready spec is a GET, which the audit
	// log (writes only) does not show; internal/owned's
	// TestHistorySpecReadOncePerGeneration counts it.
	events, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, Namespace: ns, Resource: "controllerrevisions", After: start})
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	for _, e := range events {
		written = append(written, e.Verb)
	}
	if fmt.Sprint(written) != "[create]" {
		t.Errorf("the operator wrote the revisions %v after the change, want one create:\n%s", written, writesText(events))
	}

	// Put back, the first spec is renumbered 3, and Ready with it.
	patchRobot(t, ns, "web", fmt.Sprintf(`{"spec":{"image":%q,"env":null}}`, image1))
	waitForRobot(t, ns, "web", convergeTimeout, "is Ready again, its first spec remembered as revision 3", func(r *robotv1beta1.Robot) bool {
		last := r.Status.LastReadyRevision
		return robotSettled(r) && last != nil && last.Name == first.Name && last.Revision == 3
	})
}

// waitForHistory waits until the Robot ns/name has n revisions, and
// returns them, oldest first.
func waitForHistory(t *testing.T, ns, name string, n int) []appsv1.ControllerRevision {
	t.Helper()
	var revisions []appsv1.ControllerRevision
	eventually(t, convergeTimeout, fmt.Sprintf("the Robot %s has %d revisions", name, n), func(ctx context.Context) (bool, string, error) {
		list, err := env.kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: labelRobot + "=" + name})
		if err != nil {
			return false, "", err
		}
		revisions = list.Items
		slices.SortFunc(revisions, func(a, b appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
		var seen []string
		for _, revision := range revisions {
			seen = append(seen, fmt.Sprintf("%s:%d", revision.Name, revision.Revision))
		}
		return len(revisions) == n, strings.Join(seen, " "), nil
	})
	return revisions
}

// writesText is writes, one a line.
func writesText(writes []auditEvent) string {
	var lines []string
	for _, w := range writes {
		lines = append(lines, "  "+w.String())
	}
	return strings.Join(lines, "\n")
}
