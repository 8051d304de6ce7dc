package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"

	"github.com/robot-operator/robot-operator/internal/conversion"
	"github.com/robot-operator/robot-operator/internal/serving"
	"github.com/robot-operator/robot-operator/internal/webhookcert"
	"github.com/robot-operator/robot-operator/test/internal/localcluster"
)

// conversionSeries is the API server's histogram of the calls it makes to
// a CRD's conversion webhook, one per ConversionReview, labelled by CRD,
// versions and whether the call succeeded.
const conversionSeries = "apiserver_crd_conversion_webhook_duration_seconds"

// conversions counts the API server's calls to the Robot CRD's conversion
// webhook: all of them, and those that failed (no webhook answering, as in
// the floor's phase and without -webhook).
type conversions struct{ calls, failed uint64 }

func (c conversions) minus(earlier conversions) conversions {
	return conversions{calls: c.calls - earlier.calls, failed: c.failed - earlier.failed}
}

// String is the calls, with the failed ones named when any.
func (c conversions) String() string {
	if c.failed > 0 {
		return fmt.Sprintf("%d (%d failed)", c.calls, c.failed)
	}
	return fmt.Sprint(c.calls)
}

// perRobot is the calls per Robot, with the failed ones named when any.
func (c conversions) perRobot(n int) string {
	s := fmt.Sprintf("%.2f", float64(c.calls)/float64(n))
	if c.failed > 0 {
		s += fmt.Sprintf(" (%.2f failed)", float64(c.failed)/float64(n))
	}
	return s
}

// conversions reads the API server's count of conversion webhook calls for
// the Robot CRD from its /metrics.
func (c *cluster) conversions(ctx context.Context) (conversions, error) {
	body, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return conversions{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	f, err := parseMetrics(string(body))
	if err != nil {
		return conversions{}, err
	}
	var count conversions
	for _, m := range f[conversionSeries].GetMetric() {
		if !matches(m, map[string]string{"crd_name": "robots.robot.dev"}) {
			continue
		}
		calls := m.GetHistogram().GetSampleCount()
		count.calls += calls
		if matches(m, map[string]string{"succeeded": "false"}) {
			count.failed += calls
		}
	}
	return count, nil
}

// localWebhook is where the operator serves the conversion webhook under
// -webhook, on loopback, and the CRD points the API server at it: the
// install of an operator that runs outside the cluster, as hack/demo.sh
// makes it.
type localWebhook struct{ addr string }

func newLocalWebhook() (*localWebhook, error) {
	addr, err := localcluster.FreeAddr()
	if err != nil {
		return nil, err
	}
	return &localWebhook{addr: addr}, nil
}

func (w *localWebhook) url() string { return "https://" + w.addr + "/convert" }

// operatorArgs are the operator's flags that serve the webhook there; the
// operator keeps the certificates in the manifests' Secret and writes
// their CA into the CRD.
func (w *localWebhook) operatorArgs() []string {
	return []string{"-webhook-bind-address=" + w.addr, "-webhook-url=" + w.url(), "-webhook-namespace=robot-operator"}
}

// pointCRD makes the CRD's conversion name the webhook's URL instead of the
// manifests' Service, which no pod backs here (a CRD names one or the
// other, never both).
func (w *localWebhook) pointCRD(ctx context.Context, c *cluster) error {
	patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"service":null,"url":%q}}}}}`, w.url())
	_, err := c.Kubectl(ctx, "patch", "crd", "robots.robot.dev", "--type=merge", "-p", patch)
	return err
}

// serveFloorWebhook serves, in the bench's own process, the operator's
// conversion webhook (the same handler and limits) for the floor's phase
// under -webhook, on loopback with a certificate of its own, and points
// the CRD at it with that CA: the API server then pays for the floor's
// Robots the conversions it pays for the operator's, and the floor
// client's CPU holds the webhook's as the operator's does. It returns
// what stops the server.
func serveFloorWebhook(ctx context.Context, c *cluster) (func(), error) {
	w, err := newLocalWebhook()
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(w.addr)
	if err != nil {
		return nil, err
	}
	plan, err := webhookcert.Check(nil, []string{host}, time.Now(), nil)
	if err != nil {
		return nil, err
	}
	source := &webhookcert.Source{}
	if err := source.Update(plan.Data); err != nil {
		return nil, err
	}
	convert, err := conversion.NewHandler(nil, nil)
	if err != nil {
		return nil, err
	}
	server, err := serving.Serve(klog.Background(), "floor webhook", w.addr, serving.WebhookHandler(convert), source.TLSConfig())
	if err != nil {
		return nil, err
	}
	stop := func() { serving.ShutdownServers(klog.Background(), []*http.Server{server}) }
	patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"service":null,"url":%q,"caBundle":%q}}}}}`,
		w.url(), base64.StdEncoding.EncodeToString(plan.Data[webhookcert.CABundleKey]))
	if _, err := c.Kubectl(ctx, "patch", "crd", "robots.robot.dev", "--type=merge", "-p", patch); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}
