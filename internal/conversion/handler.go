package conversion

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/robot-operator/robot-operator/pkg/apis/robot"
	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Path is where the webhook is served.
const Path = "/convert"

// MaxReviewBytes bounds a ConversionReview's body, which is read whole
// before it is decoded. The API server converts what it reads from storage
// one object at a time, so a review holds one Robot. A Robot is at most
// what etcd stores in one request (1.5 MiB by default) and never over the
// API server's own 3 MiB limit on a request body, so 4 MiB leaves room for
// the review around the largest Robot any cluster can hold. Anyone who can
// reach the port can send a body: the bound, times the requests the
// webhook holds at once (serving.MaxOpenReviews), is what they can make
// the operator hold.
const MaxReviewBytes = 4 << 20

// Result is what one review came to, for Observer.
type Result string

// The results of a review.
const (
	ResultSuccess Result = "success"
	// ResultFailure: a Robot in the review could not be converted; the API
	// server fails the request that needed it.
	ResultFailure Result = "failure"
	// ResultInvalid: the request was not a ConversionReview the webhook
	// can answer (not POST, not JSON, no request in it).
	ResultInvalid Result = "invalid"
)

// Observer is told of each review: the versions it converted from (the
// first object's) and to, what it came to, and how long it took. Each
// version is one the operator knows, or UnknownVersion: what a review
// names, which anyone who reaches the webhook writes, is never passed on
// as it is.
type Observer func(from, to string, result Result, took time.Duration)

// UnknownVersion stands, for Observer, for any version the operator does
// not know, and for none.
const UnknownVersion = "unknown"

// IgnoreObserver is told of each robot.dev/conversion-data annotation that
// a conversion to v1beta1 ignored, or that a conversion to v1alpha1 left
// out, and why. The API server converts a Robot stored in the other version
// at every read, so the same annotation is told of again at each.
type IgnoreObserver func(reason IgnoreReason)

// maxLoggedIgnores bounds the Robots (UID and resourceVersion) whose ignored
// annotation the handler remembers having logged.
const maxLoggedIgnores = 4096

// Handler answers ConversionReviews (apiextensions.k8s.io/v1) for Robots.
type Handler struct {
	observe  Observer
	ignored  IgnoreObserver
	maxBytes int64 // MaxReviewBytes; tests make it smaller

	// An ignored or left out annotation is logged once per Robot UID and
	// resourceVersion, and at most ignoreLogs allows: the API server
	// retries a LIST or WATCH many times a second, and the metric counts
	// every one.
	mu         sync.Mutex
	logged     map[[sha256.Size]byte]bool
	ignoreLogs *rate.Limiter
}

// NewHandler returns the webhook's handler. observe and ignored may be nil.
func NewHandler(observe Observer, ignored IgnoreObserver) (*Handler, error) {
	if observe == nil {
		observe = func(string, string, Result, time.Duration) {}
	}
	if ignored == nil {
		ignored = func(IgnoreReason) {}
	}
	return &Handler{
		observe:    observe,
		ignored:    ignored,
		maxBytes:   MaxReviewBytes,
		logged:     map[[sha256.Size]byte]bool{},
		ignoreLogs: rate.NewLimiter(rate.Every(time.Second), 10),
	}, nil
}

// ServeHTTP answers one ConversionReview.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	logger := klog.FromContext(r.Context())
	start := time.Now()
	review, status, err := h.readReview(w, r)
	if err != nil {
		h.observe(UnknownVersion, UnknownVersion, ResultInvalid, time.Since(start))
		logger.V(2).Info("Refused a conversion request", "remote", r.RemoteAddr, "err", clipTo(err.Error(), maxMessage))
		http.Error(w, err.Error(), status)
		return
	}
	request := review.Request
	response := &apiextensionsv1.ConversionResponse{UID: request.UID}
	converted, from, err := h.convertAll(logger, request.Objects, request.DesiredAPIVersion)
	result := ResultSuccess
	if err != nil {
		result = ResultFailure
		message := clipTo(err.Error(), maxMessage)
		response.Result = metav1.Status{Status: metav1.StatusFailure, Message: message}
		logger.Error(errors.New(message), "Conversion failed", "uid", clip(string(request.UID)), "to", clip(request.DesiredAPIVersion), "objects", len(request.Objects))
	} else {
		response.ConvertedObjects = converted
		response.Result = metav1.Status{Status: metav1.StatusSuccess}
		logger.V(4).Info("Converted", "uid", clip(string(request.UID)), "from", from, "to", request.DesiredAPIVersion, "objects", len(converted))
	}
	h.observe(observed(from), observed(request.DesiredAPIVersion), result, time.Since(start))
	answer := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
		Response: response,
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&answer); err != nil {
		logger.V(2).Info("Could not send a conversion's answer", "uid", request.UID, "err", err)
	}
}

// readReview reads and checks the request's ConversionReview, or says why it
// is not one, with the HTTP status to answer.
func (h *Handler) readReview(w http.ResponseWriter, r *http.Request) (*apiextensionsv1.ConversionReview, int, error) {
	if r.Method != http.MethodPost {
		return nil, http.StatusMethodNotAllowed, fmt.Errorf("%s takes a ConversionReview by POST, not %s", Path, r.Method)
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("%s takes application/json, not %q", Path, r.Header.Get("Content-Type"))
	}
	body, err := ReadBody(http.MaxBytesReader(w, r.Body, h.maxBytes), r.ContentLength)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("a ConversionReview of over %d bytes", tooLarge.Limit)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("reading the ConversionReview: %w", err)
	}
	var review apiextensionsv1.ConversionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("not a ConversionReview: %w", err)
	}
	if review.APIVersion != apiextensionsv1.SchemeGroupVersion.String() || review.Kind != "ConversionReview" {
		return nil, http.StatusBadRequest, fmt.Errorf("not a ConversionReview of %s but %q, kind %q: the CRD's conversionReviewVersions must be [v1]", apiextensionsv1.SchemeGroupVersion, clip(review.APIVersion), clip(review.Kind))
	}
	if review.Request == nil {
		return nil, http.StatusBadRequest, errors.New("a ConversionReview with no request")
	}
	return &review, http.StatusOK, nil
}

// convertAll converts every object to desired, or returns why one could not
// be: then none is returned, so nothing is half-converted. Only a Robot that
// is not one, or that has fields the operator does not know, fails: values
// are passed through as they are. It also returns the first object's
// version, as far as it was read.
func (h *Handler) convertAll(logger klog.Logger, objects []runtime.RawExtension, desired string) ([]runtime.RawExtension, string, error) {
	from := ""
	if !knownVersion(desired) {
		if len(objects) > 0 {
			from = versionOf(objects[0].Raw)
		}
		return nil, from, fmt.Errorf("desired version %q is not one this operator knows (%s, %s): the CRD serves a version that is newer than the operator", clip(desired), robotv1alpha1.SchemeGroupVersion, robotv1beta1.SchemeGroupVersion)
	}
	converted := make([]runtime.RawExtension, 0, len(objects))
	for i, object := range objects {
		out, ignored, version, err := convert(object.Raw, desired)
		if i == 0 {
			from = version
		}
		if err != nil {
			return nil, from, fmt.Errorf("object %d of %d: %w", i+1, len(objects), err)
		}
		if ignored != nil {
			h.ignore(logger, object.Raw, ignored)
		}
		converted = append(converted, runtime.RawExtension{Raw: out})
	}
	return converted, from, nil
}

// ignore counts an annotation that a conversion ignored or left out, and
// logs it once per Robot UID and resourceVersion, within the log's rate.
func (h *Handler) ignore(logger klog.Logger, raw []byte, ignored *Ignored) {
	h.ignored(ignored.Reason)
	var object struct {
		Metadata struct {
			Namespace       string `json:"namespace"`
			Name            string `json:"name"`
			UID             string `json:"uid"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &object)
	meta := object.Metadata
	// Anyone who reaches the webhook writes these: a hash of fixed size is
	// remembered, never the text.
	key := sha256.Sum256([]byte(meta.UID + "\x00" + meta.ResourceVersion))
	h.mu.Lock()
	seen := h.logged[key]
	if !seen {
		if len(h.logged) >= maxLoggedIgnores {
			clear(h.logged)
		}
		h.logged[key] = true
	}
	h.mu.Unlock()
	if seen || !h.ignoreLogs.Allow() {
		return
	}
	message := "Ignored the conversion-data annotation of a Robot: it restores nothing; set the fields through robot.dev/v1beta1"
	if ignored.Reason == IgnoredTooLarge {
		message = "Left the conversion-data annotation out of a Robot read as robot.dev/v1alpha1: the API server would refuse its annotations with it; a write of this Robot through v1alpha1 drops the fields only v1beta1 has"
	}
	logger.Info(message,
		"robot", klog.KRef(clip(meta.Namespace), clip(meta.Name)), "uid", clip(meta.UID), "resourceVersion", clip(meta.ResourceVersion),
		"annotation", robotv1alpha1.ConversionDataAnnotation, "reason", ignored.Reason, "err", clipError(ignored.Err))
}

// observed is version as Observer is told it: UnknownVersion unless it is
// one the operator knows.
func observed(version string) string {
	if knownVersion(version) {
		return version
	}
	return UnknownVersion
}

// knownVersion reports whether version is one of the Robot's that the
// operator converts.
func knownVersion(version string) bool {
	return version == robotv1alpha1.SchemeGroupVersion.String() || version == robotv1beta1.SchemeGroupVersion.String()
}

// Convert converts one Robot, given as JSON, to the version desired
// (robot.dev/v1alpha1 or robot.dev/v1beta1), and says what it ignored of
// the conversion's annotation. It fails only for an object that is not a
// Robot of a known version, or that has fields the operator does not know
// (a conversion would drop them: a CRD newer than the operator), or whose
// converted labels or annotations the API server would refuse even without
// the conversion's annotation (annotations stored before a rule existed):
// such an answer would fail the request all the same, uncounted.
func Convert(raw []byte, desired string) ([]byte, *Ignored, error) {
	converted, ignored, _, err := convert(raw, desired)
	return converted, ignored, err
}

// convert is Convert, and also returns the object's apiVersion as it read
// it: "" when it could not.
func convert(raw []byte, desired string) (converted []byte, ignored *Ignored, version string, err error) {
	object, err := decodeRobot(raw)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", describe(raw), err)
	}
	version, _ = object["apiVersion"].(string)
	converted, ignored, err = convertObject(raw, object, version, desired)
	return converted, ignored, version, err
}

// convertObject converts object, decoded from raw, of version, to desired.
func convertObject(raw []byte, object robotObject, version, desired string) ([]byte, *Ignored, error) {
	kind, _ := object["kind"].(string)
	gv, err := schema.ParseGroupVersion(version)
	if err != nil || gv.Group != robot.GroupName || kind != "Robot" {
		return nil, nil, fmt.Errorf("%s is a %s, and this webhook converts Robots of %s only", describe(raw), clip(gv.WithKind(kind).GroupKind().String()), robot.GroupName)
	}
	if !knownVersion(version) {
		return nil, nil, fmt.Errorf("%s is of a version this operator does not know (is the CRD newer than the operator?)", describe(raw))
	}
	if unknown := object.unknownFields(version); len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, nil, fmt.Errorf("%s has fields this operator does not know, which a conversion would drop (is the CRD newer than the operator?): unknown field %s", describe(raw), listFields(unknown))
	}
	if version == desired {
		return raw, nil, nil
	}
	original := labelsAndAnnotations(object)
	var ignored *Ignored
	switch desired {
	case robotv1beta1.SchemeGroupVersion.String():
		ignored = object.toV1beta1()
	default:
		if err := object.toV1alpha1(); err != nil {
			return nil, nil, fmt.Errorf("converting %s to %s: %w", describe(raw), clip(desired), err)
		}
		// Kept fields that do not fit beside the Robot's own annotations
		// are left out: a write through v1alpha1 then drops them, where
		// an answer the API server refuses would fail every LIST and
		// WATCH of v1alpha1.
		if refused := refusedMetadata(original, object); len(refused) > 0 {
			if _, kept := takeAnnotation(object); kept {
				ignored = &Ignored{Reason: IgnoredTooLarge, Err: refused.ToAggregate()}
			}
		}
	}
	if refused := refusedMetadata(original, object); len(refused) > 0 {
		return nil, nil, fmt.Errorf("%s as %s: the API server would refuse its metadata: %w", describe(raw), clip(desired), refused.ToAggregate())
	}
	body, err := json.Marshal(object)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding %s as %s: %w", describe(raw), clip(desired), err)
	}
	return body, ignored, nil
}

// versionOf returns the apiVersion of a JSON object, empty if it has none.
func versionOf(raw []byte) string {
	var meta metav1.TypeMeta
	_ = json.Unmarshal(raw, &meta)
	return meta.APIVersion
}

// describe names a JSON object for an error message: its kind, version,
// namespace and name, as far as they can be read.
func describe(raw []byte) string {
	var object struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &object); err != nil {
		return "an object that is not JSON"
	}
	return fmt.Sprintf("%s %s/%s (%s)", clip(object.Kind), clip(object.Metadata.Namespace), clip(object.Metadata.Name), clip(object.APIVersion))
}

// The most of a review's own text that a failure's message repeats: anyone
// who reaches the webhook writes a review, up to MaxReviewBytes, and the
// message is logged and answered.
const (
	// maxQuoted bytes of each name, kind or version the review gave.
	maxQuoted = 253
	// maxListed unknown fields.
	maxListed = 10
	// maxMessage bytes in all.
	maxMessage = 2 << 10
)

// clip returns s cut to maxQuoted bytes, at a character's boundary, with
// an ellipsis when it was cut.
func clip(s string) string {
	return clipTo(s, maxQuoted)
}

// clipTo returns s cut to n bytes, at a character's boundary, with an
// ellipsis when it was cut.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// clipError returns err's message cut to maxMessage bytes; nil for nil.
func clipError(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(clipTo(err.Error(), maxMessage))
}

// listFields quotes the first maxListed of the unknown fields, each clipped,
// and says how many more there are.
func listFields(unknown []string) string {
	listed := unknown[:min(len(unknown), maxListed)]
	quoted := make([]string, len(listed))
	for i, name := range listed {
		quoted[i] = strconv.Quote(clip(name))
	}
	text := strings.Join(quoted, ", ")
	if more := len(unknown) - len(listed); more > 0 {
		text += fmt.Sprintf(", and %d more", more)
	}
	return text
}
