package policy

import (
	"flag"
	"fmt"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// DefaultMaxGracePeriod is -max-termination-grace-period's default: an hour
// lets a pod drain long-lived connections, and bounds what one pod holds a
// node's drain or a rollout for; the CRD allows a day.
const DefaultMaxGracePeriod = time.Hour

// Shutdown is what the administrator allows of how long a Robot's pods take
// to stop. A pod's grace period holds a node's drain and a rollout while it
// runs; Robot writers who may not make pods themselves would otherwise get
// the CRD's day. The zero Shutdown allows what the CRD admits.
type Shutdown struct {
	// MaxGracePeriod, when not 0, is the longest
	// spec.terminationGracePeriodSeconds, and preStop sleep, a Robot may
	// ask for.
	MaxGracePeriod time.Duration
}

// flags registers the shutdown's flag on fs; the returned function reads
// it into s once fs is parsed.
func (s *Shutdown) flags(fs *flag.FlagSet) func() error {
	maximum := fs.Duration("max-termination-grace-period", DefaultMaxGracePeriod, "The longest spec.terminationGracePeriodSeconds (and spec.preStop sleep) a Robot may ask for, in whole seconds, from 30s (Kubernetes' default) to 24h (the CRD's maximum). A Robot that asks for more reports Synced=False, GracePeriodNotAllowed, and its Deployment is left as it is.")
	return func() error {
		const most = robotv1beta1.MaxTerminationGracePeriodSeconds * time.Second
		const least = robotv1beta1.DefaultTerminationGracePeriodSeconds * time.Second
		if *maximum < least || *maximum > most || *maximum%time.Second != 0 {
			return fmt.Errorf("-max-termination-grace-period: %v is not a whole number of seconds from %v to %v", *maximum, least, most)
		}
		s.MaxGracePeriod = *maximum
		return nil
	}
}

// CheckShutdown returns why the operator may not give robot's pods the
// grace period or preStop sleep it asks for, as an outcome.NotAllowedError;
// nil when it may. An unset grace period is Kubernetes' 30 seconds, which
// any maximum allows.
func (p *Policy) CheckShutdown(robot *robotv1beta1.Robot) error {
	most := int64(p.Shutdown.MaxGracePeriod / time.Second)
	if most == 0 {
		return nil
	}
	if grace := robot.Spec.TerminationGracePeriodSeconds; grace != nil && *grace > most {
		return gracePeriodNotAllowed(fmt.Sprintf("spec.terminationGracePeriodSeconds %d is more than the %d seconds -max-termination-grace-period allows", *grace, most))
	}
	if preStop := robot.Spec.PreStop; preStop != nil && preStop.Sleep != nil && preStop.Sleep.Seconds > most {
		return gracePeriodNotAllowed(fmt.Sprintf("spec.preStop.sleep.seconds %d is more than the %d seconds -max-termination-grace-period allows", preStop.Sleep.Seconds, most))
	}
	return nil
}

// gracePeriodNotAllowed is the refusal of a Robot's shutdown.
func gracePeriodNotAllowed(message string) error {
	return &outcome.NotAllowedError{Reason: robotv1beta1.ReasonGracePeriodNotAllowed, Message: message + "; no Deployment is written for it, and one it has is left as it is"}
}
