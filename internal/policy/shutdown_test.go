package policy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func TestShutdown(t *testing.T) {
	seconds := func(s int64) *int64 { return &s }
	sleep := func(s int64) *robotv1beta1.RobotPreStop {
		return &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: s}}
	}
	for _, tt := range []struct {
		name    string
		flags   []string
		grace   *int64
		preStop *robotv1beta1.RobotPreStop
		refused string
	}{
		{"unset", nil, nil, nil, ""},
		{"the default's hour", nil, seconds(3600), sleep(3599), ""},
		{"a day, by default", nil, seconds(86400), sleep(86399), "spec.terminationGracePeriodSeconds 86400 is more than the 3600 seconds"},
		{"a day, allowed", []string{"-max-termination-grace-period=24h"}, seconds(86400), sleep(86399), ""},
		{"at the maximum", []string{"-max-termination-grace-period=5m"}, seconds(300), sleep(290), ""},
		{"a second above", []string{"-max-termination-grace-period=5m"}, seconds(301), nil, "301 is more than the 300 seconds"},
		// A sleep at or above the grace period is InvalidSpec as well; the
		// maximum is said first.
		{"the sleep counts too", []string{"-max-termination-grace-period=5m"}, nil, sleep(86399), "spec.preStop.sleep.seconds 86399"},
		{"an exec hook is bounded by the grace period", []string{"-max-termination-grace-period=30s"}, nil,
			&robotv1beta1.RobotPreStop{Exec: &robotv1beta1.RobotExec{Command: []string{"drain"}}}, ""},
		{"unset is Kubernetes' 30 s, which any maximum allows", []string{"-max-termination-grace-period=30s"}, nil, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, tt.flags...)
			if err != nil {
				t.Fatal(err)
			}
			robot := &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "tenant-b"},
				Spec: robotv1beta1.RobotSpec{TerminationGracePeriodSeconds: tt.grace, PreStop: tt.preStop}}
			err = p.CheckShutdown(robot)
			if tt.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			reason, message := notAllowed(t, err)
			if reason != robotv1beta1.ReasonGracePeriodNotAllowed || !strings.Contains(message, tt.refused) || !strings.Contains(message, "-max-termination-grace-period") {
				t.Errorf("%s: %s\nwant %s saying %q and naming the flag", reason, message, robotv1beta1.ReasonGracePeriodNotAllowed, tt.refused)
			}
		})
	}
}

func TestShutdownFlag(t *testing.T) {
	p, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if p.Shutdown.MaxGracePeriod != time.Hour {
		t.Errorf("default maximum %v, want an hour", p.Shutdown.MaxGracePeriod)
	}
	for _, bad := range []string{"29s", "24h1s", "90.5s", "0"} {
		if _, err := parse(t, "-max-termination-grace-period="+bad); err == nil || !strings.Contains(err.Error(), "-max-termination-grace-period") {
			t.Errorf("-max-termination-grace-period=%s: err = %v, want one naming the flag", bad, err)
		}
	}
}
