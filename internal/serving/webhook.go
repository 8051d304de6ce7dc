package serving

import (
	"net/http"
	"time"

	"github.com/robot-operator/robot-operator/internal/conversion"
)

// WebhookHandler returns the conversion webhook server's handler: convert
// at conversion.Path.
func WebhookHandler(convert http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(conversion.Path, convert)
	return mux
}

// MaxConcurrentReviews is how many ConversionReviews the webhook serves
// at once.
const MaxConcurrentReviews = 4

// reviewSlotWait is how long a review waits for a slot.
const reviewSlotWait = time.Second
