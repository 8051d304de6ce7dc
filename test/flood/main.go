// Command flood measures the operator's memory under the floods of the
// webhook and metrics review (docs/security.md has the figures): it starts
// the operator binary against a local cluster, with the conversion webhook,
// secure metrics and pprof on loopback ports, sends each flood to
// 127.0.0.1 only, bounded in count and time, and prints the operator's peak
// RSS (VmHWM of /proc/PID/status, reset before each flood through
// /proc/PID/clear_refs) and its heap (HeapAlloc, sampled, and live after a
// forced GC) per flood.
//
//	make build
//	CLUSTER_NAME=flood KUBECONFIG_OUT=$PWD/_output/flood-kubeconfig hack/cluster.sh up
//	eval "$(hack/tools.sh env)"
//	go run ./test/flood -kubeconfig _output/flood-kubeconfig -kubectl "$KUBECTL" -bin bin/robot-operator
//
// It fails when a flood takes the peak RSS past -max-rss-mib (200 MiB).
//
// It installs the CRD, readies the webhook as hack/local-webhook.sh does,
// and creates the namespaces robot-flood-foreign and robot-flood-convert,
// which it deletes at the end. Linux only (it reads /proc, and sends the
// slow bodies from 127.0.0.2).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotclientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// The operator's ports, all on loopback.
const (
	webhookPort = 19443
	metricsPort = 18443
	pprofPort   = 16060
	healthPort  = 18081
)

// The shipped memory limit (artifacts/deploy/deployment.yaml).
const memoryLimitMiB = 512

const foreignNamespace = "robot-flood-foreign"

const slowBodyNamespace = "robot-flood-convert"

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the local cluster")
	bin := flag.String("bin", "bin/robot-operator", "the operator binary")
	kubectl := flag.String("kubectl", os.Getenv("KUBECTL"), "kubectl")
	logPath := flag.String("log", "_output/flood-operator.log", "where the operator's log goes")
	only := flag.String("only", "", "run only the floods whose name contains this")
	maxRSS := flag.Int64("max-rss-mib", 200, "fail when a flood's peak RSS passes this many MiB (0: never); the shipped limit is 512")
	flag.Parse()
	if err := run(*kubeconfig, *bin, *kubectl, *logPath, *only, *maxRSS<<20); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, bin, kubectl, logPath, only string, maxRSS int64) error {
	if kubeconfig == "" || kubectl == "" {
		return fmt.Errorf("-kubeconfig and -kubectl (or $KUBECONFIG and $KUBECTL) are needed")
	}
	kubeconfig, _ = filepath.Abs(kubeconfig)
	root, err := repoRoot()
	if err != nil {
		return err
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBECTL="+kubectl)
	// An existing CRD is kept: the webhook's URL is already set on it.
	for _, args := range [][]string{
		{"sh", "-c", `"$KUBECTL" get crd robots.robot.dev >/dev/null 2>&1 || "$KUBECTL" create -f "$1"`, "sh", filepath.Join(root, "artifacts/crd")},
		{kubectl, "wait", "--for=condition=Established", "crd/robots.robot.dev", "--timeout=60s"},
		{filepath.Join(root, "hack/local-webhook.sh"), strconv.Itoa(webhookPort)},
	} {
		// The CRD has no conditions for a moment after it is created.
		for attempt := 1; ; attempt++ {
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err == nil {
				break
			}
			if attempt == 10 {
				return fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
			}
			time.Sleep(time.Second)
		}
	}

	out, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer out.Close()
	operator := exec.Command(bin,
		"-kubeconfig", kubeconfig,
		"-leader-elect=false",
		fmt.Sprintf("-webhook-bind-address=127.0.0.1:%d", webhookPort),
		fmt.Sprintf("-webhook-url=https://127.0.0.1:%d/convert", webhookPort),
		"-webhook-namespace=robot-operator",
		fmt.Sprintf("-metrics-bind-address=127.0.0.1:%d", metricsPort),
		"-metrics-secure=true",
		fmt.Sprintf("-pprof-bind-address=127.0.0.1:%d", pprofPort),
		fmt.Sprintf("-health-probe-bind-address=127.0.0.1:%d", healthPort),
		"-logging-format=json")
	operator.Stdout, operator.Stderr = out, out
	if err := operator.Start(); err != nil {
		return err
	}
	defer func() {
		_ = operator.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = operator.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = operator.Process.Kill()
		}
	}()
	pid := operator.Process.Pid
	fmt.Printf("operator %s, pid %d, log %s\n", bin, pid, logPath)
	if err := waitForWebhook(2 * time.Minute); err != nil {
		return err
	}
	time.Sleep(5 * time.Second) // the caches fill, the start-up allocations settle

	client, robots, err := kubeClients(kubeconfig)
	if err != nil {
		return err
	}
	var over, failed []string
	fmt.Printf("%-44s %10s %12s %12s %12s %8s  %s\n", "flood", "RSS MiB", "peak RSS", "peak heap", "live heap", "max fds", "answers")
	for _, f := range []struct {
		name string
		run  func() (string, error)
	}{
		{"(a) 60 MiB + 64 x 4 MiB conversion reviews", floodReviews},
		{"(b) 200 slowloris + 200 idle connections", func() (string, error) { return floodConnections(pid) }},
		{"(c) metrics: 1 MiB paths, bogus tokens", floodMetrics},
		{"(d) 40 labelled 1 MB Deployments, 40 forged", func() (string, error) { return floodForeign(client, robots) }},
		{"(e) 40 slow bodies, v1alpha1 GETs timed", func() (string, error) { return floodSlowBodies(client, robots) }},
		{"(f) 64 x 4 MiB UIDs, annotations to ignore", floodIgnoredAnnotations},
	} {
		if only != "" && !strings.Contains(f.name, only) {
			continue
		}
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			return fmt.Errorf("resetting the peak RSS: %w", err)
		}
		before := readRSS(pid)
		sampler := startSampler(pid)
		answers, err := f.run()
		time.Sleep(2 * time.Second)
		peakHeap, maxFDs := sampler.stop()
		live, _ := heapAlloc(true)
		status := procStatus(pid)
		if err != nil {
			answers += " error: " + err.Error()
			failed = append(failed, fmt.Sprintf("%s: %v", f.name, err))
		}
		fmt.Printf("%-44s %10s %12s %12s %12s %8d  %s\n", f.name,
			mib(before), mib(status["VmHWM"]), mib(peakHeap), mib(live), maxFDs, answers)
		if !processAlive(pid) {
			return fmt.Errorf("the operator died during %s (the limit would be %d MiB)", f.name, memoryLimitMiB)
		}
		if maxRSS > 0 && status["VmHWM"] > maxRSS {
			over = append(over, fmt.Sprintf("%s: peak RSS %s MiB", f.name, mib(status["VmHWM"])))
		}
	}
	fmt.Printf("shipped memory limit: %d MiB\n", memoryLimitMiB)
	if len(over) > 0 {
		return fmt.Errorf("over %s MiB of RSS: %s", mib(maxRSS), strings.Join(over, "; "))
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed: %s", strings.Join(failed, "; "))
	}
	return nil
}

// httpsClient talks to the operator's self-made certificates on loopback.
func httpsClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
			MaxIdleConnsPerHost: 64,
		},
	}
}

func waitForWebhook(timeout time.Duration) error {
	client := httpsClient(2 * time.Second)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/convert", webhookPort))
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("the webhook did not serve TLS within %s", timeout)
}

// review returns a ConversionReview of one v1beta1 Robot of about size
// bytes.
func review(size int) []byte {
	head := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"flood","desiredAPIVersion":"robot.dev/v1alpha1","objects":[{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"flood","namespace":"flood"},"spec":{"image":"`
	tail := `"}}]}}`
	return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
}

// codes counts HTTP answers (and errors) by status.
type codes struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *codes) add(code string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[code]++
}

func (c *codes) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.n)
}

func (c *codes) do(client *http.Client, req *http.Request) {
	resp, err := client.Do(req)
	if err != nil {
		c.add("error")
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.add(strconv.Itoa(resp.StatusCode))
}

// floodReviews posts one 60 MiB review, then 64 reviews of just under the
// cap, 16 at a time.
func floodReviews() (string, error) {
	var c codes
	client := httpsClient(60 * time.Second)
	url := fmt.Sprintf("https://127.0.0.1:%d/convert", webhookPort)
	post := func(body []byte) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		c.do(client, req)
	}
	post(review(60 << 20))
	body := review(4<<20 - 4096)
	var wg sync.WaitGroup
	work := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			for range work {
				post(body)
			}
		})
	}
	for range 64 {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	return c.String(), nil
}

// floodIgnoredAnnotations sends 64 reviews of about 4 MiB, 2 at a time (so
// that each is answered, not refused for the webhook's limits),
// each a v1alpha1 Robot with a UID of its own of about 4 MiB and a
// conversion annotation that the conversion to v1beta1 ignores, and logs
// once per Robot: what the webhook remembers of each must not be its UID.
func floodIgnoredAnnotations() (string, error) {
	var c codes
	client := httpsClient(60 * time.Second)
	url := fmt.Sprintf("https://127.0.0.1:%d/convert", webhookPort)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 2 {
		wg.Go(func() {
			for i := range work {
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(ignoredAnnotationReview(i, 4<<20-4096)))
				req.Header.Set("Content-Type", "application/json")
				c.do(client, req)
			}
		})
	}
	for i := range 64 {
		work <- i
	}
	close(work)
	wg.Wait()
	return c.String(), nil
}

// ignoredAnnotationReview returns a ConversionReview of about size bytes of
// one v1alpha1 Robot, to v1beta1, whose UID starts with i and whose
// conversion annotation is not the conversion's.
func ignoredAnnotationReview(i, size int) []byte {
	head := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"flood","desiredAPIVersion":"robot.dev/v1beta1","objects":[{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":"flood","namespace":"flood","resourceVersion":"1","annotations":{"robot.dev/conversion-data":"set by hand"},"uid":"` + strconv.Itoa(i) + "-"
	tail := `"},"spec":{"image":"registry.example/flood:1.0","port":8080}}]}}`
	return []byte(head + strings.Repeat("u", size-len(head)-len(tail)) + tail)
}

// floodConnections opens 200 TLS connections that send their headers, then
// a body byte every 3 s, and 200 that make one request and stay idle; it
// reports how many of each the operator still holds 15 s and 70 s later.
func floodConnections(pid int) (string, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", webhookPort)
	dial := func() (net.Conn, error) {
		return tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	}
	var open atomic.Int32
	var slow, idle []net.Conn
	for range 200 {
		conn, err := dial()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(conn, "POST /convert HTTP/1.1\r\nHost: flood\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
		slow = append(slow, conn)
	}
	for range 200 {
		conn, err := dial()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(conn, "GET /convert HTTP/1.1\r\nHost: flood\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		idle = append(idle, conn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 70*time.Second)
	defer cancel()
	// The slow clients drip; a write that fails means the server closed.
	for _, conn := range slow {
		open.Add(1)
		go func() {
			defer open.Add(-1)
			for ctx.Err() == nil {
				if _, err := conn.Write([]byte("x")); err != nil {
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(3 * time.Second):
				}
			}
		}()
	}
	idleOpen := func() int {
		n := 0
		for _, conn := range idle {
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			_, err := conn.Read(make([]byte, 1))
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				n++
			}
		}
		return n
	}
	time.Sleep(15 * time.Second)
	report := fmt.Sprintf("after 15s: %d slow, %d idle open, operator fds %d", open.Load(), idleOpen(), countFDs(pid))
	<-ctx.Done()
	report += fmt.Sprintf("; after 70s: %d idle open, operator fds %d", idleOpen(), countFDs(pid))
	for _, conn := range append(slow, idle...) {
		conn.Close()
	}
	return report, nil
}

// floodMetrics sends 250 requests with bogus tokens and 1 MiB paths at 10
// a second (the review's reproduction at twice its rate), then 500 to
// /metrics with bogus tokens as fast as they go, then 50 with 9 KiB tokens.
func floodMetrics() (string, error) {
	var c codes
	client := httpsClient(10 * time.Second)
	base := fmt.Sprintf("https://127.0.0.1:%d", metricsPort)
	get := func(path, token string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		c.do(client, req)
	}
	longPath := "/" + strings.Repeat("a", 1<<20)
	for i := range 250 {
		go get(longPath, fmt.Sprintf("bogus-path-%d", i))
		time.Sleep(100 * time.Millisecond)
	}
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Go(func() { get("/metrics", fmt.Sprintf("bogus-%d", i)) })
	}
	for i := range 50 {
		wg.Go(func() { get("/metrics", strings.Repeat("t", 9<<10)+strconv.Itoa(i)) })
	}
	wg.Wait()
	return c.String(), nil
}

// floodForeign creates a Robot and 80 Deployments labelled as the
// operator's, with replicas 0 and a 1 MB env value each: 40 owned by
// nothing, and 40 whose controller reference names the Robot by its real
// UID (which the garbage collector leaves alone). It waits for the
// informer to have them, then deletes them all.
func floodForeign(client kubernetes.Interface, robots robotclientset.Interface) (string, error) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: foreignNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	defer func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), foreignNamespace, metav1.DeleteOptions{})
	}()
	robot, err := robots.RobotV1beta1().Robots(foreignNamespace).Create(ctx, floodRobot("during"), metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	forged := []metav1.OwnerReference{{APIVersion: robotv1beta1.SchemeGroupVersion.String(), Kind: "Robot", Name: robot.Name, UID: robot.UID, Controller: ptr.To(true)}}
	value := strings.Repeat("x", 1000*1000)
	for i := range 80 {
		labels := map[string]string{"app.kubernetes.io/managed-by": "robot-operator", "app": "foreign"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("foreign-%d", i), Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "foreign"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "foreign"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c", Env: []corev1.EnvVar{{Name: "PADDING", Value: value}}}}},
				},
			},
		}
		if i >= 40 {
			d.Name = fmt.Sprintf("forged-%d", i-40)
			d.OwnerReferences = forged
		}
		if _, err := client.AppsV1().Deployments(foreignNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return "", err
		}
	}
	time.Sleep(10 * time.Second) // the watch delivers them to the cache
	live, err := heapAlloc(true)
	return fmt.Sprintf("80 created (40 naming Robot %s/%s); live heap with them cached: %s MiB", foreignNamespace, robot.Name, mib(live)), err
}

// floodRobot is a Robot of one replica and no Service, named name.
func floodRobot(name string) *robotv1beta1.Robot {
	return &robotv1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: robotv1beta1.RobotSpec{
			Image:    "example.invalid/robot:1",
			Replicas: ptr.To[int32](1),
			Service:  &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNone},
		},
	}
}

// The address the slow bodies come from: a host other than the API
// server's, which reaches the webhook from 127.0.0.1.
const strangerAddr = "127.0.0.2"

// floodSlowBodies keeps 40 TLS connections to the webhook from
// strangerAddr, each sending a review's headers with a Content-Length of 4
// MB, then a byte every 2 s, and opening another when cut off; meanwhile it
// reads a Robot stored as v1beta1 through robot.dev/v1alpha1 10 times, 2 s
// apart, each read converted by the webhook. It fails when a read fails or
// takes over 5 s.
func floodSlowBodies(client kubernetes.Interface, robots robotclientset.Interface) (string, error) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: slowBodyNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	defer func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), slowBodyNamespace, metav1.DeleteOptions{})
	}()
	robot := floodRobot("good")
	robot.Namespace = slowBodyNamespace
	if _, err := robots.RobotV1beta1().Robots(slowBodyNamespace).Create(ctx, robot, metav1.CreateOptions{}); err != nil {
		return "", err
	}

	floodCtx, stop := context.WithCancel(ctx)
	var holders sync.WaitGroup
	var connections atomic.Int32
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(strangerAddr)}}
	addr := fmt.Sprintf("127.0.0.1:%d", webhookPort)
	for range 40 {
		holders.Go(func() {
			for floodCtx.Err() == nil {
				conn, err := tls.DialWithDialer(dialer, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				connections.Add(1)
				_, err = fmt.Fprintf(conn, "POST /convert HTTP/1.1\r\nHost: flood\r\nContent-Type: application/json\r\nContent-Length: 4000000\r\n\r\n{")
				for err == nil && floodCtx.Err() == nil {
					select {
					case <-floodCtx.Done():
					case <-time.After(2 * time.Second):
						_, err = conn.Write([]byte(" "))
					}
				}
				_ = conn.Close()
			}
		})
	}
	time.Sleep(3 * time.Second) // every connection has sent its headers

	path := fmt.Sprintf("/apis/robot.dev/v1alpha1/namespaces/%s/robots/good", slowBodyNamespace)
	var slowest time.Duration
	var failures []string
	for i := range 10 {
		getCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		start := time.Now()
		err := client.Discovery().RESTClient().Get().AbsPath(path).Do(getCtx).Error()
		took := time.Since(start)
		cancel()
		slowest = max(slowest, took)
		if err != nil || took > 5*time.Second {
			failures = append(failures, fmt.Sprintf("GET %d: %v after %v", i+1, err, took.Round(time.Millisecond)))
		}
		time.Sleep(2 * time.Second)
	}
	stop()
	holders.Wait()
	report := fmt.Sprintf("%d slow connections; 10 v1alpha1 GETs, %d failed or over 5s, slowest %v", connections.Load(), len(failures), slowest.Round(time.Millisecond))
	if len(failures) > 0 {
		return report, fmt.Errorf("v1alpha1 GETs during the slow bodies: %s", strings.Join(failures, "; "))
	}
	return report, nil
}

// sampler samples the operator's heap and open fds until stopped.
type sampler struct {
	stopped  chan struct{}
	done     chan struct{}
	peakHeap int64
	maxFDs   int
}

func startSampler(pid int) *sampler {
	s := &sampler{stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			if h, err := heapAlloc(false); err == nil && h > s.peakHeap {
				s.peakHeap = h
			}
			s.maxFDs = max(s.maxFDs, countFDs(pid))
			select {
			case <-s.stopped:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *sampler) stop() (int64, int) {
	close(s.stopped)
	<-s.done
	return s.peakHeap, s.maxFDs
}

var heapAllocLine = regexp.MustCompile(`(?m)^# HeapAlloc = (\d+)$`)

// heapAlloc reads HeapAlloc from the operator's pprof, after a GC when gc
// is set.
func heapAlloc(gc bool) (int64, error) {
	url := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?debug=1", pprofPort)
	if gc {
		url += "&gc=1"
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := heapAllocLine.FindSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("no HeapAlloc in the heap profile")
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// procStatus returns the memory lines of /proc/PID/status, in bytes.
func procStatus(pid int) map[string]int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	out := map[string]int64{}
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || !strings.HasSuffix(value, " kB") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(value, " kB")), 10, 64)
		if err == nil {
			out[name] = kb << 10
		}
	}
	return out
}

func readRSS(pid int) int64 { return procStatus(pid)["VmRSS"] }

func countFDs(pid int) int {
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(entries)
}

func processAlive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func kubeClients(kubeconfig string) (kubernetes.Interface, robotclientset.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	robots, err := robotclientset.NewForConfig(cfg)
	return client, robots, err
}

func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("finding the repository's root: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
