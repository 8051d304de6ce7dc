package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/robot-operator/robot-operator/internal/conversion"
)

// ConversionMetrics count the conversion webhook's reviews, on every
// replica. A failure is a request of a client that got an error instead of
// its Robots; the alert RobotOperatorConversionFailing watches for them.
type ConversionMetrics struct {
	reviews  *prometheus.CounterVec
	duration prometheus.Histogram
	ignored  *prometheus.CounterVec
}

// NewConversionMetrics returns the webhook's metrics, registered with
// registry.
func NewConversionMetrics(registry prometheus.Registerer) (*ConversionMetrics, error) {
	m := &ConversionMetrics{
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace,
			Name:      "conversion_reviews_total",
			Help:      "ConversionReviews the webhook answered, by the version converted to (robot.dev/v1alpha1, robot.dev/v1beta1, or unknown for any other a review asks for) and result: success, failure (a Robot could not be converted; the request that needed it failed) or invalid (not a ConversionReview).",
		}, []string{"to_version", "result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: metricsNamespace,
			Name:      "conversion_review_duration_seconds",
			Help:      "How long the webhook takes to answer a ConversionReview.",
			Buckets:   prometheus.ExponentialBuckets(0.0001, 4, 10), // 0.1ms .. 26s
		}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace,
			Name:      "conversion_annotations_ignored_total",
			Help:      "Conversions that ignored a Robot's robot.dev/conversion-data annotation or left it out, by reason: not_conversion_data (to v1beta1: not the JSON the conversion writes), invalid (to v1beta1: values v1beta1 refuses) or too_large (to v1alpha1: left out, as the Robot's annotations with it would be over the API server's 256 KiB; a write through v1alpha1 drops those fields). The API server converts a Robot at every read, so one Robot counts again at each; the log names it once.",
		}, []string{"reason"}),
	}
	for _, reason := range []conversion.IgnoreReason{conversion.IgnoredNotJSON, conversion.IgnoredInvalid, conversion.IgnoredTooLarge} {
		m.ignored.WithLabelValues(string(reason))
	}
	// Every series exists from the start, at 0, so that an alert on the
	// failures' rate has a series to compare with before the first one.
	for _, to := range []string{"robot.dev/v1alpha1", "robot.dev/v1beta1"} {
		for _, result := range []conversion.Result{conversion.ResultSuccess, conversion.ResultFailure} {
			m.reviews.WithLabelValues(to, string(result))
		}
	}
	for _, c := range []prometheus.Collector{m.reviews, m.duration, m.ignored} {
		if err := registry.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Observe is a conversion.Observer.
func (m *ConversionMetrics) Observe(_, to string, result conversion.Result, took time.Duration) {
	m.reviews.WithLabelValues(to, string(result)).Inc()
	m.duration.Observe(took.Seconds())
}

// ObserveIgnored is a conversion.IgnoreObserver.
func (m *ConversionMetrics) ObserveIgnored(reason conversion.IgnoreReason) {
	m.ignored.WithLabelValues(string(reason)).Inc()
}
