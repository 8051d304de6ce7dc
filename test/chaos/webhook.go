package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/test/internal/localcluster"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

// webhookKills is how many times scenario 10 kills every replica.
const webhookKills = 4

// writeBudget is how long a write of scenario 10 is retried before it
// counts as lost: the webhook is down for a lease duration and a little
// after each kill.
const writeBudget = 2 * time.Minute

// killWebhook (scenario 10) runs two leader-elected replicas, each serving
// the conversion webhook, behind one URL: a TCP proxy on 127.0.0.1 that
// forwards each connection to a replica that accepts it. Half the Robots are
// created and changed through v1beta1, the other half through v1alpha1,
// and Robots of both halves are changed through v1alpha1 and scaled through
// either version, while both replicas are killed with SIGKILL 4 times at
// once and started again. v1alpha1 needs the webhook: while no replica
// serves it, its writes fail, and they are retried until they pass. Every
// write must pass in the end or be refused with an error that says why, and
// every Robot must be there and readable through both versions.
func killWebhook(ctx context.Context, s *scenarioRun) error {
	var addrs []string
	for range 2 {
		addr, err := localcluster.FreeAddr()
		if err != nil {
			return err
		}
		addrs = append(addrs, addr)
	}
	proxy, err := startProxy(addrs...)
	if err != nil {
		return err
	}
	s.cleanups = append(s.cleanups, proxy.close)
	url := "https://" + proxy.addr + "/convert"
	// A merge patch, which drops the Service that the shipped CRD names: no
	// pod backs it here.
	patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"service":null,"url":%q}}}}}`, url)
	if out, err := s.c.Kubectl(ctx, "patch", "crd", "robots.robot.dev", "--type=merge", "-p", patch); err != nil {
		return fmt.Errorf("pointing the CRD's conversion at %s: %w\n%s", url, err, out)
	}
	var replicas []*replica
	for i, name := range []string{"a", "b"} {
		r, err := s.startReplica(ctx, name, s.kubeconfig,
			"-webhook-bind-address="+addrs[i], "-webhook-url="+url, "-webhook-namespace="+leaseNamespace)
		if err != nil {
			return err
		}
		replicas = append(replicas, r)
	}
	if err := s.waitWebhook(ctx, ""); err != nil {
		return err
	}

	if err := createOversized(ctx, s.c); err != nil {
		return err
	}
	alpha := newVersionedWriter(s.c, s.w, s.want-s.want/2, s.env.cfg.seed)
	s.w.n = s.want / 2
	s.faultStart = time.Now()
	stop := s.churn(ctx, 200*time.Millisecond)
	stopAlpha := alpha.start(ctx, 300*time.Millisecond)
	var downs []float64
	killed := ""
	for i := range webhookKills {
		if err := s.waitWebhook(ctx, killed); err != nil {
			return fmt.Errorf("after %d kills: %w", i, err)
		}
		select {
		case <-time.After(time.Duration(s.rng.Int63n(int64(3 * time.Second)))):
		case <-ctx.Done():
			return ctx.Err()
		}
		killed = s.holder(ctx)
		killedAt := time.Now()
		for _, r := range replicas {
			r.killAndRestart()
		}
		logf("killed both replicas %d times; %d Robots created through v1beta1, %d through v1alpha1", i+1, s.w.created.Load(), alpha.created.Load())
		if err := s.waitWebhook(ctx, killed); err != nil {
			return fmt.Errorf("after %d kills: %w", i+1, err)
		}
		downs = append(downs, time.Since(killedAt).Seconds())
	}
	s.faultEnd = time.Now()
	if err := stop(); err != nil {
		return err
	}
	if err := stopAlpha(); err != nil {
		return err
	}
	sort.Float64s(downs)
	s.notes = append(s.notes, fmt.Sprintf("%d kills of both replicas in %.0f s; a new leader ran and the webhook converted %.1f-%.1f s after each (lease duration %s)",
		webhookKills, s.faultEnd.Sub(s.faultStart).Seconds(), downs[0], downs[len(downs)-1], leaseDuration))
	s.checks = append(s.checks, alpha.check())
	s.notes = append(s.notes, alpha.summary())
	names := alpha.names()
	for i := range s.w.n {
		names = append(names, robotName(i))
	}
	s.auditChecks = append(s.auditChecks, func(audit []auditEvent) check {
		s.notes = append(s.notes, s.unexpectedExits(func(*replica) time.Time { return s.faultStart })...)
		c, _, _ := checkOneWriter(audit)
		return c
	}, func([]auditEvent) check {
		// Run at the end, once every Robot converged.
		return checkReadableInBothVersions(ctx, s.c, names)
	}, func([]auditEvent) check {
		return checkOversizedListed(ctx, s.c)
	})
	return nil
}

// oversizedNamespace holds scenario 10's oversized Robot, apart from the
// Robots the other checks count.
const oversizedNamespace = "chaos-oversized"

// sizePolicy is the ValidatingAdmissionPolicy binding of
// artifacts/deploy/size-policy.yaml, which refuses the oversized Robot.
const sizePolicy = "robot-operator-v1alpha1-size"

// createOversized stores, in a namespace of its own, a Robot whose v1alpha1
// form would carry more annotations than the API server accepts: its own of
// 262,068 bytes, and a second port, which v1alpha1 keeps in
// robot.dev/conversion-data. The webhook leaves the annotation out of it;
// were its answer refused, every v1alpha1 LIST and WATCH of the cluster
// would fail, the versioned writer's among them, while the replicas are
// killed and started again. The shipped size policy refuses to make such a
// Robot: its binding goes first, as on a cluster where the Robot was made
// before it (the scenario's cluster is its own).
func createOversized(ctx context.Context, c *cluster) error {
	if out, err := c.Kubectl(ctx, "delete", "validatingadmissionpolicybinding", sizePolicy, "--ignore-not-found"); err != nil {
		return fmt.Errorf("unbinding the size policy: %w\n%s", err, out)
	}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: oversizedNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	robot := &robotv1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: "oversized", Annotations: map[string]string{"example.com/note": strings.Repeat("x", 262068)}},
		Spec: robotv1beta1.RobotSpec{Image: imageV1, Replicas: ptr.To[int32](0), Ports: []robotv1beta1.RobotPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		}},
	}
	// The binding's removal reaches admission a moment later.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.Robots.RobotV1beta1().Robots(oversizedNamespace).Create(ctx, robot, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("creating the oversized Robot: %w", err)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkOversizedListed: a LIST of every namespace through v1alpha1 works,
// and holds the oversized Robot with its own annotation and without
// robot.dev/conversion-data.
func checkOversizedListed(ctx context.Context, c *cluster) check {
	const name = "v1alpha1 LIST with an oversized Robot"
	list, err := c.Robots.RobotV1alpha1().Robots("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return checkf(name, false, "listing every namespace through v1alpha1: %v", err)
	}
	for _, robot := range list.Items {
		if robot.Namespace != oversizedNamespace {
			continue
		}
		_, kept := robot.Annotations[robotv1alpha1.ConversionDataAnnotation]
		ok := !kept && len(robot.Annotations["example.com/note"]) == 262068
		return checkf(name, ok, "%d Robots listed; the oversized one with its own annotation %v, conversion-data %v", len(list.Items), len(robot.Annotations["example.com/note"]) == 262068, kept)
	}
	return checkf(name, false, "%d Robots listed, not the oversized one", len(list.Items))
}

// waitWebhook waits until a replica other than the process of identity not
// leads, and the webhook converts: a v1alpha1 create, sent as a dry run,
// passes.
func (s *scenarioRun) waitWebhook(ctx context.Context, not string) error {
	if _, _, err := s.waitLeader(ctx, 2*time.Minute, not); err != nil {
		return err
	}
	probe := &robotv1alpha1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe", Namespace: namespace},
		Spec:       robotv1alpha1.RobotSpec{Image: imageV1},
	}
	return task.WaitFor(ctx, 2*time.Minute, 100*time.Millisecond, "the conversion webhook", func() (bool, error) {
		_, err := s.c.Robots.RobotV1alpha1().Robots(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})
}

// versionedWriter creates its Robots through v1alpha1, and meanwhile changes
// Robots of its own and of the workload through v1alpha1, and scales them
// through either version. Each write is retried until it passes, is refused
// for good (an error that is not the server's nor the webhook's), or
// writeBudget has passed.
type versionedWriter struct {
	c        *cluster
	workload *workload
	n        int

	mu  sync.Mutex
	rng *rand.Rand
	// stats counts, by kind of write, how they ended.
	stats map[string]*writeStats
	// failures are distinct error messages, by kind, with their counts.
	failures map[string]map[string]int

	created atomic.Int64
}

// writeStats counts how the writes of one kind ended.
type writeStats struct {
	passed, refused, lost, retried int
	// unclear are errors that are no API status with a message.
	unclear []string
}

func newVersionedWriter(c *cluster, w *workload, n int, seed int64) *versionedWriter {
	return &versionedWriter{c: c, workload: w, n: n, rng: rand.New(rand.NewSource(seed + 1000)),
		stats: map[string]*writeStats{}, failures: map[string]map[string]int{}}
}

func alphaName(i int) string { return fmt.Sprintf("alpha-%04d", i) }

// names are the writer's Robots.
func (v *versionedWriter) names() []string {
	var names []string
	for i := range v.n {
		names = append(names, alphaName(i))
	}
	return names
}

func (v *versionedWriter) intn(n int) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rng.Intn(n)
}

// start creates the Robots, spread over createSpread, and changes one every
// interval until the returned stop is called, which waits for every write
// to end.
func (v *versionedWriter) start(ctx context.Context, interval time.Duration) (stop func() error) {
	done := make(chan struct{})
	var writes sync.WaitGroup
	created := make(chan error, 1)
	go func() {
		pace := time.NewTicker(createSpread / time.Duration(max(v.n, 1)))
		defer pace.Stop()
		created <- task.Parallel(ctx, v.n, 4, func(ctx context.Context, i int) error {
			select {
			case <-pace.C:
			case <-ctx.Done():
				return ctx.Err()
			}
			robot := &robotv1alpha1.Robot{
				ObjectMeta: metav1.ObjectMeta{Name: alphaName(i), Namespace: namespace},
				Spec:       robotv1alpha1.RobotSpec{Image: imageV1, Replicas: ptr.To(int32(1 + i%3))},
			}
			passed := v.write(ctx, "create through v1alpha1", func(ctx context.Context) error {
				_, err := v.c.Robots.RobotV1alpha1().Robots(namespace).Create(ctx, robot, metav1.CreateOptions{})
				// A create whose answer was lost may have happened.
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				return err
			})
			if passed {
				v.created.Add(1)
			}
			return nil
		})
	}()
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		// At most 4 changes at once: while the webhook is down, they wait.
		slots := make(chan struct{}, 4)
		for {
			select {
			case <-tick.C:
			case <-done:
				return
			case <-ctx.Done():
				return
			}
			select {
			case slots <- struct{}{}:
			default:
				continue
			}
			writes.Go(func() {
				defer func() { <-slots }()
				v.change(ctx)
			})
		}
	}()
	return func() error {
		err := <-created
		close(done)
		writes.Wait()
		return err
	}
}

// change changes a Robot created already, of either half: its image or
// replicas through v1alpha1, or its scale through v1alpha1 or v1beta1.
func (v *versionedWriter) change(ctx context.Context) {
	var name string
	if ours, theirs := int(v.created.Load())-4, int(v.workload.created.Load())-8; v.intn(2) == 0 && ours > 0 {
		name = alphaName(v.intn(ours))
	} else if theirs > 0 {
		name = robotName(v.intn(theirs))
	} else {
		return
	}
	replicas := 1 + v.intn(3)
	switch v.intn(3) {
	case 0:
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		if v.intn(2) == 0 {
			patch = fmt.Sprintf(`{"spec":{"image":%q}}`, []string{imageV1, imageV2}[v.intn(2)])
		}
		v.write(ctx, "change through v1alpha1", func(ctx context.Context) error {
			_, err := v.c.Robots.RobotV1alpha1().Robots(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		})
	default:
		version := "v1alpha1"
		rest := v.c.Robots.RobotV1alpha1().RESTClient()
		if v.intn(2) == 0 {
			version, rest = "v1beta1", v.c.Robots.RobotV1beta1().RESTClient()
		}
		// The scale subresource answers an autoscaling/v1 Scale, which the
		// Robot clients cannot decode: the error alone is read.
		v.write(ctx, "scale through "+version, func(ctx context.Context) error {
			return rest.Patch(types.MergePatchType).Namespace(namespace).Resource("robots").Name(name).SubResource("scale").
				Body([]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))).Do(ctx).Error()
		})
	}
}

// write runs one write until it passes, is refused for good, or writeBudget
// has passed, counts how it ended and every error it met, and reports
// whether it passed.
func (v *versionedWriter) write(ctx context.Context, kind string, do func(ctx context.Context) error) bool {
	deadline := time.Now().Add(writeBudget)
	retried := false
	for {
		err := do(ctx)
		v.mu.Lock()
		st := v.stats[kind]
		if st == nil {
			st = &writeStats{}
			v.stats[kind] = st
		}
		var status apierrors.APIStatus
		switch {
		case err == nil:
			st.passed++
		case !errors.As(err, &status) || strings.TrimSpace(status.Status().Message) == "":
			st.unclear = append(st.unclear, err.Error())
		default:
			if v.failures[kind] == nil {
				v.failures[kind] = map[string]int{}
			}
			v.failures[kind][errorShape(err)]++
		}
		refused := err != nil && errors.As(err, &status) && refusedForGood(err)
		if refused {
			st.refused++
		}
		lost := err != nil && !refused && (time.Now().After(deadline) || ctx.Err() != nil)
		if lost {
			st.lost++
		}
		if retried && err == nil {
			st.retried++
		}
		v.mu.Unlock()
		if err == nil || refused || lost {
			return err == nil
		}
		retried = true
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// refusedForGood reports whether err is a refusal that a retry cannot
// change: the request itself is wrong, not the server nor the webhook.
func refusedForGood(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err)
}

// errorShape is an error's message with its numbers (ports, timeouts,
// resourceVersions) and quoted names taken out, so that alike errors count
// together.
func errorShape(err error) string {
	return numbers.ReplaceAllString(quoted.ReplaceAllString(err.Error(), `"…"`), "N")
}

var (
	numbers = regexp.MustCompile(`[0-9]+`)
	quoted  = regexp.MustCompile(`"[^"]*"`)
)

// check: every write passed in the end, or was refused with an error that
// says why; none was lost, and every error was an API status with a
// message.
func (v *versionedWriter) check() check {
	v.mu.Lock()
	defer v.mu.Unlock()
	ok := true
	var parts []string
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range v.stats {
			if !yield(k) {
				return
			}
		}
	})
	for _, kind := range kinds {
		st := v.stats[kind]
		parts = append(parts, fmt.Sprintf("%s: %d passed (%d after a retry), %d refused with a status that says why, %d lost, %d unclear errors",
			kind, st.passed, st.retried, st.refused, st.lost, len(st.unclear)))
		if st.lost > 0 || len(st.unclear) > 0 {
			ok = false
		}
		if len(st.unclear) > 0 {
			parts = append(parts, fmt.Sprintf("e.g. %q", st.unclear[0]))
		}
	}
	if int(v.created.Load()) != v.n {
		ok = false
		parts = append(parts, fmt.Sprintf("%d of %d Robots created through v1alpha1", v.created.Load(), v.n))
	}
	return checkf("writes through both versions", ok, "%s", strings.Join(parts, "; "))
}

// summary lists the errors the writes met, the commonest first.
func (v *versionedWriter) summary() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	type seen struct {
		text  string
		count int
	}
	var all []seen
	for kind, shapes := range v.failures {
		for shape, n := range shapes {
			all = append(all, seen{kind + ": " + shape, n})
		}
	}
	if len(all) == 0 {
		return "no write met an error"
	}
	sort.Slice(all, func(i, j int) bool { return all[i].count > all[j].count })
	var parts []string
	for _, s := range all[:min(3, len(all))] {
		parts = append(parts, fmt.Sprintf("%d× %s", s.count, truncate(s.text, 240)))
	}
	return "errors met and retried: " + strings.Join(parts, "; ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// checkReadableInBothVersions: every Robot in names is there, the lists of
// both versions hold them all and nothing else, and each can be read by name
// through both.
func checkReadableInBothVersions(ctx context.Context, c *cluster, names []string) check {
	want := slices.Sorted(slices.Values(names))
	var problems []string
	alpha, err := c.Robots.RobotV1alpha1().Robots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return checkf("readable in both versions", false, "listing through v1alpha1: %v", err)
	}
	beta, err := c.Robots.RobotV1beta1().Robots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return checkf("readable in both versions", false, "listing through v1beta1: %v", err)
	}
	var alphaNames, betaNames []string
	for _, r := range alpha.Items {
		alphaNames = append(alphaNames, r.Name)
	}
	for _, r := range beta.Items {
		betaNames = append(betaNames, r.Name)
	}
	slices.Sort(alphaNames)
	slices.Sort(betaNames)
	if !slices.Equal(alphaNames, want) {
		problems = append(problems, fmt.Sprintf("the v1alpha1 list holds %d Robots, want %d", len(alphaNames), len(want)))
	}
	if !slices.Equal(betaNames, want) {
		problems = append(problems, fmt.Sprintf("the v1beta1 list holds %d Robots, want %d", len(betaNames), len(want)))
	}
	for _, name := range want {
		if _, err := c.Robots.RobotV1alpha1().Robots(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			problems = append(problems, fmt.Sprintf("%s through v1alpha1: %v", name, err))
		}
		if _, err := c.Robots.RobotV1beta1().Robots(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			problems = append(problems, fmt.Sprintf("%s through v1beta1: %v", name, err))
		}
	}
	if len(problems) > 0 {
		return checkf("readable in both versions", false, "%d problems, e.g. %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	return checkf("readable in both versions", true, "%d Robots, each listed and read by name through v1alpha1 and v1beta1", len(want))
}
