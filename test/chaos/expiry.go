package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/robot-operator/robot-operator/test/internal/task"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// writesForImageChange bounds the operator's writes (Events aside) that a
// Robot whose image changed needs: the Deployment apply, preceded the first
// time by the patch that claims the fields the operator's create set
// (internal/drift); the status write that reports the new generation;
// and, per replica the rollout replaces one at a time (maxSurge 1,
// maxUnavailable 0), up to three status writes as the counts move (the new
// pod created, ready and available, the old one gone).
func writesForImageChange(replicas int32) int { return 3 + 3*int(replicas) }

// watchExpiry (scenario 5) makes the operator's watches expire: with every
// Robot converged, it stops the operator (SIGSTOP), changes half of the
// Robots, restarts kube-apiserver and continues the operator (SIGCONT).
//
// The operator's watches are served from the API server's watch cache, not
// from etcd: compacting etcd does not reach them, and the cache keeps a
// window of recent events whatever etcd keeps. A restarted API server fills
// its cache afresh, from the current revision, so a watch that comes back
// from a resourceVersion the operator saw before the pause is answered
// "410 Gone: too old resource version", as it is in a cluster when the API
// server is upgraded or the operator falls behind the cache's window. The
// operator must then relist, and find from the relisted Robots that only
// the changed ones need writes.
func watchExpiry(ctx context.Context, s *scenarioRun) error {
	// client-go's reflector says that a watch expired at verbosity 4.
	s.opArgs = []string{"-vmodule=reflector=4"}
	if err := s.startOperator(ctx); err != nil {
		return err
	}
	all := map[string]*component{}
	for _, name := range components {
		p, err := s.c.component(name)
		if err != nil {
			return err
		}
		all[name] = p
	}
	if err := s.churn(ctx, 200*time.Millisecond)(); err != nil {
		return err
	}
	if _, err := waitConverged(ctx, s.c, s.w.n, 10*time.Minute); err != nil {
		return fmt.Errorf("before the pause: %w", err)
	}

	s.faultStart = time.Now()
	if err := s.op.pause(); err != nil {
		return err
	}
	logf("paused the operator with every Robot converged")
	changed := map[string]bool{}
	picked := s.rng.Perm(s.w.n)[:s.w.n/2]
	for _, i := range picked {
		changed[robotName(i)] = true
	}
	before, err := s.c.Robots.RobotV1beta1().Robots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	image := map[string]string{}
	replicas := map[string]int32{}
	for _, r := range before.Items {
		image[r.Name] = r.Spec.Image
		replicas[r.Name] = ptr.Deref(r.Spec.Replicas, 1)
	}
	if err := task.Parallel(ctx, len(picked), 8, func(ctx context.Context, i int) error {
		name := robotName(picked[i])
		next := imageV2
		if image[name] == imageV2 {
			next = imageV1
		}
		_, err := s.c.Robots.RobotV1beta1().Robots(namespace).Patch(ctx, name, types.MergePatchType,
			[]byte(fmt.Sprintf(`{"spec":{"image":%q}}`, next)), metav1.PatchOptions{})
		return err
	}); err != nil {
		return err
	}
	s.w.mu.Lock()
	s.w.changes += len(picked)
	s.w.mu.Unlock()
	logf("changed the image of %d Robots while the operator is paused; restarting kube-apiserver", len(picked))
	apiserver := all["kube-apiserver"]
	if err := apiserver.kill(); err != nil {
		return err
	}
	if err := apiserver.restart(); err != nil {
		return err
	}
	if err := s.c.waitReady(ctx, 2*time.Minute); err != nil {
		return err
	}
	go supervise(ctx, all, s.done)
	s.faultEnd = time.Now()
	fmt.Fprintf(s.log, "=== chaos: %s resuming the operator\n", s.faultEnd.UTC().Format(time.RFC3339Nano))
	if err := s.op.resume(); err != nil {
		return err
	}
	logf("resumed the operator after %.1f s", s.faultEnd.Sub(s.faultStart).Seconds())
	s.notes = append(s.notes, fmt.Sprintf("paused %.1f s; %d of %d Robots changed meanwhile", s.faultEnd.Sub(s.faultStart).Seconds(), len(picked), s.w.n))

	s.finish = func(ctx context.Context, audit []auditEvent, convergedAt, idleEnd time.Time) error {
		expired, err := expiredWatches(s.log.Name())
		if err != nil {
			return err
		}
		relists := 0
		for _, e := range audit {
			if !e.RequestReceived.Before(s.faultEnd) && e.ObjectRef.Resource == "robots" && e.ObjectRef.Name == "" && isRelist(&e) {
				relists++
			}
		}
		s.checks = append(s.checks, checkf("watch expired", len(expired) > 0 && relists > 0,
			"after the resume, the operator's log says %d watches closed with \"too old resource version\" (%s), and it relisted the Robots %d times",
			len(expired), strings.Join(expired, ", "), relists))

		// The writes from the resume until the idle time ended: the
		// changed Robots may need a few each, the others none.
		perRobot := map[string]int{}
		byResource := map[string]int{}
		writesIn(audit, s.faultEnd, idleEnd, func(e *auditEvent) bool {
			perRobot[e.ObjectRef.Name]++
			byResource[strings.TrimSuffix(e.ObjectRef.Resource+"/"+e.ObjectRef.Subresource, "/")]++
			return true
		})
		total, unchanged, most := 0, 0, 0
		var examples []string
		for name, n := range perRobot {
			total += n
			most = max(most, n)
			if !changed[name] {
				unchanged += n
				examples = append(examples, fmt.Sprintf("%s: %d", name, n))
			}
		}
		sort.Strings(examples)
		bound := 0
		for name := range changed {
			bound += writesForImageChange(replicas[name])
		}
		s.checks = append(s.checks, checkf("bounded writes", total <= bound && unchanged == 0,
			"%d operator writes after the resume for %d changed Robots (bound %d: 3 + 3 per replica each), at most %d for one; %d to unchanged Robots (bound 0)%s",
			total, len(changed), bound, most, unchanged, exampleList(examples)))
		s.notes = append(s.notes, fmt.Sprintf("%d watches expired; %d Robot relists; %d writes after the resume (%s), %.2f per changed Robot, bound %d",
			len(expired), relists, total, formatSizes(byResource), float64(total)/float64(max(len(changed), 1)), bound))
		return nil
	}
	return nil
}

func exampleList(examples []string) string {
	if len(examples) == 0 {
		return ""
	}
	return ", e.g. " + strings.Join(examples[:min(5, len(examples))], ", ")
}

// isRelist reports whether a request of the operator starts a Robot
// informer's cache afresh: a list, or a watch that sends the current
// objects first (client-go's watch-list). A watch that resumes from a
// resourceVersion is neither.
func isRelist(e *auditEvent) bool {
	return e.Verb == "list" || e.Verb == "watch" && strings.Contains(e.RequestURI, "sendInitialEvents=true")
}

var reflectorType = regexp.MustCompile(`type="([^"]*)"`)

// expiredWatches returns, from the operator's log after the last resume,
// the types of the watches client-go's reflector says were closed with
// "too old resource version" (410 Gone), one entry per closed watch.
func expiredWatches(logPath string) ([]string, error) {
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return nil, err
	}
	text := string(raw)
	i := strings.LastIndex(text, "resuming the operator")
	if i < 0 {
		return nil, fmt.Errorf("%s: no resume marker", logPath)
	}
	var expired []string
	for _, line := range strings.Split(text[i:], "\n") {
		if !strings.Contains(line, "Watch closed") || !strings.Contains(line, "too old resource version") {
			continue
		}
		what := "?"
		if m := reflectorType.FindStringSubmatch(line); m != nil {
			what = m[1]
		}
		expired = append(expired, what)
	}
	slices.Sort(expired)
	return expired, nil
}
