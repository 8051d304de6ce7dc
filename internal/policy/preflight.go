package policy

import (
	"flag"
	"fmt"
)

// DefaultPreflightQPS and DefaultPreflightBurst are -preflight-qps's and
// -preflight-burst's defaults: ten checks a second, each one dry-run and a
// GET per distinct object the pods refer to, is a rollout pace no
// Deployment controller keeps up with, and a small part of what the API
// server serves the syncs.
const (
	DefaultPreflightQPS   = 10
	DefaultPreflightBurst = 20
)

// Preflight is whether and how fast a Robot's new pod template is checked
// before its Deployment is written (internal/preflight). The zero
// Preflight checks nothing.
type Preflight struct {
	// Enabled turns the check on.
	Enabled bool
	// QPS and Burst are the token bucket of the checks, apart from the
	// syncs' client's: a check takes one token.
	QPS   float64
	Burst int
}

// flags registers the check's flags on fs; the returned function reads
// them into p once fs is parsed.
func (p *Preflight) flags(fs *flag.FlagSet) func() error {
	enabled := fs.Bool("preflight", true, "Before a Robot's changed pod template is written to its Deployment, create one pod of it as a server-side dry run and look up the ConfigMaps, Secrets, ServiceAccount and PriorityClass it names: a change the cluster would refuse leaves the Deployment as it is and reports Synced=False, ChangeRejected. false: no check.")
	qps := fs.Float64("preflight-qps", DefaultPreflightQPS, "The checks of changed pod templates a second (-preflight), on a token bucket of their own, apart from -kube-api-qps.")
	burst := fs.Int("preflight-burst", DefaultPreflightBurst, "The checks of changed pod templates in a burst (-preflight).")
	return func() error {
		if *enabled && (*qps <= 0 || *burst < 1) {
			return fmt.Errorf("-preflight-qps %v and -preflight-burst %d: give a rate above 0 and a burst of at least 1, or -preflight=false", *qps, *burst)
		}
		p.Enabled, p.QPS, p.Burst = *enabled, *qps, *burst
		return nil
	}
}
