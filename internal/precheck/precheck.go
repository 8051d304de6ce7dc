// Package precheck is the operator's pre-upgrade check, `robot-operator
// check-conversion`: it reads every Robot as the API server stores it and
// reports those that the conversion webhook would refuse, those whose
// robot.dev/conversion-data annotation it would ignore (keys case-folded or
// repeated among the reasons) or leave out of their v1alpha1 form (the API
// server would refuse their annotations with it), and those that the
// operator will report as InvalidSpec: holding values it cannot read (a
// quantity such as 1e1.5), or beyond the CRD's rules. It reads Robots and
// writes nothing.
package precheck

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/robot-operator/robot-operator/internal/conversion"
	"github.com/robot-operator/robot-operator/internal/robotclient"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/pkg/apis/robot"
	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// Command is the subcommand of the operator's binary that runs the check.
const Command = "check-conversion"

// pageSize is how many Robots one LIST asks for.
const pageSize = 500

// Main runs the check with the command line args (those after Command). It
// returns the exit code: 0 when every Robot converts cleanly, 1 when some
// do not or cannot be listed, 2 for a usage error.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "Path to a kubeconfig. Only required if out-of-cluster.")
	master := fs.String("master", "", "The address of the Kubernetes API server. Overrides any value in kubeconfig.")
	timeout := fs.Duration("timeout", 5*time.Minute, "How long the whole check may take.")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: robot-operator %s [flags]\n\nLists every Robot, through each version the cluster serves, and reports the Robots that the\nconversion webhook of this release would refuse, whose %s annotation it would ignore,\nor that hold values the operator cannot read. Run it before an upgrade; it writes nothing.\n\n", Command, robotv1alpha1.ConversionDataAnnotation)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var cfg *rest.Config
	var err error
	if *kubeconfig == "" && *master == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags(*master, *kubeconfig)
	}
	if err != nil {
		fmt.Fprintf(stderr, "robot-operator %s: no cluster to connect to: %v\n", Command, err)
		return 2
	}
	cfg.UserAgent = "robot-operator-" + Command
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "robot-operator %s: %v\n", Command, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	lists := map[string]rest.Interface{
		robotv1alpha1.SchemeGroupVersion.Version: client.RobotV1alpha1().RESTClient(),
		robotv1beta1.SchemeGroupVersion.Version:  client.RobotV1beta1().RESTClient(),
	}
	report := Run(ctx, func(ctx context.Context, version, next string) ([]byte, error) {
		request := lists[version].Get().Resource("robots").Param("limit", fmt.Sprint(pageSize))
		if next != "" {
			request = request.Param("continue", next)
		}
		return request.DoRaw(ctx)
	})
	report.Write(stdout)
	if report.Failed() {
		return 1
	}
	return 0
}

// ListPage returns one page of Robots of a version ("v1alpha1",
// "v1beta1") as the API server's JSON, from the continue token next.
type ListPage func(ctx context.Context, version, next string) ([]byte, error)

// Problem is what is wrong with one Robot.
type Problem struct {
	Namespace, Name string
	// Version is the version the Robot was read in.
	Version string
	Message string
}

// Report is what the check found.
type Report struct {
	// Checked is how many Robots were read, by version.
	Checked map[string]int
	// NotServed are the versions the cluster does not serve.
	NotServed []string
	// ListErrors are the versions that could not be listed, and why: the
	// API server could not convert a Robot, most often.
	ListErrors map[string]error
	Problems   []Problem
}

// Failed reports whether the check found anything to fix.
func (r *Report) Failed() bool {
	return len(r.Problems) > 0 || len(r.ListErrors) > 0 || len(r.Checked) == 0
}

// Write writes the report for a person.
func (r *Report) Write(w io.Writer) {
	for _, p := range r.Problems {
		fmt.Fprintf(w, "%s/%s (read as robot.dev/%s): %s\n", p.Namespace, p.Name, p.Version, p.Message)
	}
	for _, version := range []string{robotv1alpha1.SchemeGroupVersion.Version, robotv1beta1.SchemeGroupVersion.Version} {
		if err, ok := r.ListErrors[version]; ok {
			fmt.Fprintf(w, "listing Robots as robot.dev/%s failed: %v\n", version, err)
		}
	}
	for _, version := range r.NotServed {
		fmt.Fprintf(w, "robot.dev/%s is not served: skipped\n", version)
	}
	switch {
	case len(r.Checked) == 0:
		fmt.Fprintln(w, "no version of Robots could be listed: nothing was checked")
	case r.Failed():
		fmt.Fprintf(w, "%d problems: fix or delete those Robots before the upgrade (docs/operating.md, Upgrading)\n", len(r.Problems)+len(r.ListErrors))
	default:
		var counts []string
		for _, version := range []string{robotv1alpha1.SchemeGroupVersion.Version, robotv1beta1.SchemeGroupVersion.Version} {
			if n, ok := r.Checked[version]; ok {
				counts = append(counts, fmt.Sprintf("%d read as robot.dev/%s", n, version))
			}
		}
		fmt.Fprintf(w, "every Robot converts cleanly (%s)\n", strings.Join(counts, ", "))
	}
}

// Run lists every Robot through each version and checks it.
func Run(ctx context.Context, list ListPage) *Report {
	report := &Report{Checked: map[string]int{}, ListErrors: map[string]error{}}
	seen := map[string]bool{} // a Robot's problems are reported once, by UID
	for _, version := range []string{robotv1alpha1.SchemeGroupVersion.Version, robotv1beta1.SchemeGroupVersion.Version} {
		next := ""
		for {
			raw, err := list(ctx, version, next)
			if apierrors.IsNotFound(err) {
				report.NotServed = append(report.NotServed, version)
				break
			}
			if err != nil {
				report.ListErrors[version] = err
				break
			}
			var page struct {
				Metadata struct {
					Continue string `json:"continue"`
				} `json:"metadata"`
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				report.ListErrors[version] = fmt.Errorf("not a list of Robots: %w", err)
				break
			}
			report.Checked[version] += len(page.Items)
			for _, item := range page.Items {
				for _, problem := range Check(item) {
					key := problem.Namespace + "/" + problem.Name + ": " + problem.Message
					if !seen[key] {
						seen[key] = true
						report.Problems = append(report.Problems, problem)
					}
				}
			}
			if page.Metadata.Continue == "" {
				break
			}
			next = page.Metadata.Continue
		}
	}
	return report
}

// Check returns what is wrong with one Robot, given as the API server's
// JSON: what the conversion to the other version refuses, ignores or leaves
// out (the API server's own checks of a conversion's metadata included),
// and the values the operator cannot read.
func Check(raw []byte) []Problem {
	var object struct {
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &object)
	problem := func(format string, args ...any) Problem {
		return Problem{Namespace: object.Metadata.Namespace, Name: object.Metadata.Name, Version: robotVersion(object.APIVersion), Message: fmt.Sprintf(format, args...)}
	}
	var problems []Problem
	beta := raw
	if object.APIVersion != robotv1beta1.SchemeGroupVersion.String() {
		converted, ignored, err := conversion.Convert(raw, robotv1beta1.SchemeGroupVersion.String())
		if err != nil {
			return []Problem{problem("would not convert to robot.dev/v1beta1: %v", err)}
		}
		if ignored != nil {
			problems = append(problems, problem("its %s annotation would be ignored (%s): %v; remove it, and after the upgrade set the fields it held through robot.dev/v1beta1", robotv1alpha1.ConversionDataAnnotation, ignored.Reason, ignored.Err))
		}
		beta = converted
	} else {
		// Convert checks the answer's labels and annotations as the API
		// server checks a conversion's: an answer it would refuse is an
		// error, and conversion-data that would not fit is left out.
		_, ignored, err := conversion.Convert(raw, robotv1alpha1.SchemeGroupVersion.String())
		switch {
		case err != nil:
			problems = append(problems, problem("would not convert to robot.dev/v1alpha1: %v", err))
		case ignored != nil && ignored.Reason == conversion.IgnoredTooLarge:
			problems = append(problems, problem("read as robot.dev/v1alpha1, its annotations with %s would be over what the API server accepts (%v): "+
				"an earlier release's webhook fails every LIST and WATCH of robot.dev/v1alpha1 while it is stored, and this release leaves the annotation out, so that a write through v1alpha1 drops its ports but the first, strategy, minReadySeconds, init containers, sidecars, grace period, preStop hook and Service fields; "+
				"make its annotations smaller", robotv1alpha1.ConversionDataAnnotation, ignored.Err))
		}
	}
	robot, err := robotclient.DecodeRobot(beta)
	if err != nil {
		return append(problems, problem("is not a Robot the operator can read: %v", err))
	}
	if err := workload.UndecodableSpec(robot); err != nil {
		return append(problems, problem("holds a value the operator cannot read, and will be InvalidSpec until it is fixed: %v", err))
	}
	// What the operator builds from the Robot, and refuses as InvalidSpec:
	// a spec stored before a rule existed, or around one.
	if _, err := workload.NewDeployment(robot); err != nil {
		problems = append(problems, problem("the operator will report it InvalidSpec: %v", err))
	}
	return problems
}

// robotVersion returns the version of a Robot's apiVersion.
func robotVersion(apiVersion string) string {
	return strings.TrimPrefix(apiVersion, robot.GroupName+"/")
}
