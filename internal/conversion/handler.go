package conversion

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/klog/v2"

	"github.com/robot-operator/robot-operator/pkg/apis/robot"
	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Path is where the webhook is served.
const Path = "/convert"

// maxReviewBytes bounds a ConversionReview's body, which is read whole
// before it is decoded. The API server converts what it reads from storage
// one object at a time, so a review holds one Robot. A Robot is at most
// what etcd stores in one request (1.5 MiB by default) and never over the
// API server's own 3 MiB limit on a request body, so 4 MiB leaves room for
// the review around the largest Robot any cluster can hold. Anyone who can
// reach the port can send a body: the bound, times the reviews served at
// once (serving.MaxConcurrentReviews), is what they can make the operator
// hold.
const maxReviewBytes = 4 << 20

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
// first object's) and to, what it came to, and how long it took.
type Observer func(from, to string, result Result, took time.Duration)

// Handler answers ConversionReviews (apiextensions.k8s.io/v1) for Robots.
type Handler struct {
	scheme     *runtime.Scheme
	serializer *kjson.Serializer
	observe    Observer
	maxBytes   int64 // maxReviewBytes; tests make it smaller
}

// NewHandler returns the webhook's handler. observe may be nil.
func NewHandler(observe Observer) (*Handler, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{robotv1alpha1.AddToScheme, robotv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	if observe == nil {
		observe = func(string, string, Result, time.Duration) {}
	}
	return &Handler{
		scheme: scheme,
		// Strict: a field the operator does not know would be dropped by
		// the conversion, so the conversion fails instead. That is a CRD
		// newer than the operator, and the message says so.
		serializer: kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Strict: true}),
		observe:    observe,
		maxBytes:   maxReviewBytes,
	}, nil
}

// ServeHTTP answers one ConversionReview.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	logger := klog.FromContext(r.Context())
	start := time.Now()
	review, status, err := h.readReview(w, r)
	if err != nil {
		h.observe("", "", ResultInvalid, time.Since(start))
		logger.V(2).Info("Refused a conversion request", "remote", r.RemoteAddr, "err", err)
		http.Error(w, err.Error(), status)
		return
	}
	request := review.Request
	response := &apiextensionsv1.ConversionResponse{UID: request.UID}
	from := ""
	if len(request.Objects) > 0 {
		from = versionOf(request.Objects[0].Raw)
	}
	converted, err := h.convertAll(request.Objects, request.DesiredAPIVersion)
	result := ResultSuccess
	if err != nil {
		result = ResultFailure
		response.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		logger.Error(err, "Conversion failed", "uid", request.UID, "to", request.DesiredAPIVersion, "objects", len(request.Objects))
	} else {
		response.ConvertedObjects = converted
		response.Result = metav1.Status{Status: metav1.StatusSuccess}
		logger.V(4).Info("Converted", "uid", request.UID, "from", from, "to", request.DesiredAPIVersion, "objects", len(converted))
	}
	h.observe(from, request.DesiredAPIVersion, result, time.Since(start))
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBytes))
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
		return nil, http.StatusBadRequest, fmt.Errorf("not a ConversionReview of %s but %q, kind %q: the CRD's conversionReviewVersions must be [v1]", apiextensionsv1.SchemeGroupVersion, review.APIVersion, review.Kind)
	}
	if review.Request == nil {
		return nil, http.StatusBadRequest, errors.New("a ConversionReview with no request")
	}
	return &review, http.StatusOK, nil
}

// convertAll converts every object to desired, or returns why one could not
// be: then none is returned, so nothing is half-converted.
func (h *Handler) convertAll(objects []runtime.RawExtension, desired string) ([]runtime.RawExtension, error) {
	target, err := schema.ParseGroupVersion(desired)
	if err != nil {
		return nil, fmt.Errorf("desired version %q: %w", desired, err)
	}
	if !h.scheme.IsVersionRegistered(target) {
		return nil, fmt.Errorf("desired version %q is not one this operator knows (%s, %s): the CRD serves a version that is newer than the operator", desired, robotv1alpha1.SchemeGroupVersion, robotv1beta1.SchemeGroupVersion)
	}
	converted := make([]runtime.RawExtension, 0, len(objects))
	for i, object := range objects {
		out, err := h.convert(object.Raw, target)
		if err != nil {
			return nil, fmt.Errorf("object %d of %d: %w", i+1, len(objects), err)
		}
		converted = append(converted, runtime.RawExtension{Raw: out})
	}
	return converted, nil
}

// convert converts one Robot, given as JSON, to target.
func (h *Handler) convert(raw []byte, target schema.GroupVersion) ([]byte, error) {
	in, gvk, err := h.serializer.Decode(raw, nil, nil)
	if err != nil {
		if runtime.IsStrictDecodingError(err) {
			return nil, fmt.Errorf("%s has fields this operator does not know, which a conversion would drop (is the CRD newer than the operator?): %w", describe(raw), err)
		}
		return nil, fmt.Errorf("%s: %w", describe(raw), err)
	}
	if gvk.Group != robot.GroupName || gvk.Kind != "Robot" {
		return nil, fmt.Errorf("%s is a %s, and this webhook converts Robots of %s only", describe(raw), gvk.GroupKind(), robot.GroupName)
	}
	if gvk.GroupVersion() == target {
		return raw, nil
	}
	out, err := h.scheme.ConvertToVersion(in, target)
	if err != nil {
		return nil, fmt.Errorf("converting %s to %s: %w", describe(raw), target, err)
	}
	body, err := runtime.Encode(h.serializer, out)
	if err != nil {
		return nil, fmt.Errorf("encoding %s as %s: %w", describe(raw), target, err)
	}
	return body, nil
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
	return fmt.Sprintf("%s %s/%s (%s)", object.Kind, object.Metadata.Namespace, object.Metadata.Name, object.APIVersion)
}
