// Command preflightcost measures what the checks of changed pod templates
// cost the API server: internal/preflight's Checker, at its default rate,
// against a cluster, each check a new template (a new image) of another
// Robot, whose pods read a ConfigMap key unless -configmap=false. It
// reports the API server's CPU (from /proc, so the API server must run on
// this machine: a local cluster, hack/cluster.sh) and the outcomes.
//
//	go run ./test/preflightcost -kubeconfig K -apiserver-pid "$(cat ~/.kwok/clusters/NAME/pids/kube-apiserver.pid)"
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/preflight"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// cpu is the CPU time process pid has used so far.
func cpu(pid string) time.Duration {
	b, _ := os.ReadFile("/proc/" + pid + "/stat")
	f := strings.Fields(string(b)[strings.LastIndex(string(b), ")")+2:])
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return time.Duration(u+s) * 10 * time.Millisecond
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "The kubeconfig of the cluster.")
	pid := flag.String("apiserver-pid", "", "The process ID of the kube-apiserver.")
	n := flag.Int("n", 1000, "How many checks, each of a new template.")
	withConfigMap := flag.Bool("configmap", true, "The pods read a ConfigMap key, which each check looks up.")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		panic(err)
	}
	// As the operator's preflight client: the Checker has the rate limit.
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	ns := "preflight-cost"
	// Both may exist from an earlier run.
	_, _ = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	_, _ = client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "info"}}, metav1.CreateOptions{})
	var outcomes [8]atomic.Int64
	idx := map[string]int{}
	for i, o := range preflight.Outcomes {
		idx[o] = i
	}
	checker := preflight.New(client, policy.Preflight{Enabled: true, QPS: policy.DefaultPreflightQPS, Burst: policy.DefaultPreflightBurst},
		func(o string) { outcomes[idx[o]].Add(1) })
	start, cpu0 := time.Now(), cpu(*pid)
	for i := range *n {
		robot := &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i), Namespace: ns, UID: types.UID(fmt.Sprint(i))},
			Spec: robotv1beta1.RobotSpec{Image: fmt.Sprintf("registry.example/app:%d", i), Replicas: ptr.To[int32](1)}}
		if *withConfigMap {
			robot.Spec.Env = []corev1.EnvVar{{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "level"}}}}
		}
		desired, err := workload.NewDeployment(robot)
		if err != nil {
			panic(err)
		}
		// A check past the burst waits for its turn, as the workers'
		// requeue makes it wait, and is made then.
		err = checker.Check(ctx, robot, desired, &appsv1.Deployment{})
		for due := outcome.DueIn(err); due > 0; due = outcome.DueIn(err) {
			time.Sleep(due)
			err = checker.Check(ctx, robot, desired, &appsv1.Deployment{})
		}
		if err != nil {
			panic(err)
		}
	}
	elapsed, used := time.Since(start), cpu(*pid)-cpu0
	fmt.Printf("checks %d in %s (%.1f/s); kube-apiserver CPU %s, %.2f ms per check\n", *n, elapsed.Round(time.Millisecond), float64(*n)/elapsed.Seconds(), used, float64(used.Microseconds())/1000/float64(*n))
	for i, o := range preflight.Outcomes {
		fmt.Printf("  %s %d\n", o, outcomes[i].Load())
	}
}
