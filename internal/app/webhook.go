package app

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"github.com/robot-operator/robot-operator/internal/conversion"
	"github.com/robot-operator/robot-operator/internal/metrics"
	"github.com/robot-operator/robot-operator/internal/serving"
	"github.com/robot-operator/robot-operator/internal/webhookcert"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/robot-operator/robot-operator/pkg/apis/robot"
)

// WebhookOptions say where the conversion webhook listens, how the API
// server reaches it, and who keeps its certificates.
type WebhookOptions struct {
	// Addr is where the webhook listens; empty or "0": off, and with it
	// the certificates' upkeep.
	Addr string
	// Namespace, Secret and Service name the Secret of its certificates
	// and the Service through which the API server reaches it.
	Namespace string
	Secret    string
	Service   string
	// URL, when set, is how the API server reaches it instead of Service.
	URL string
	// Certs is WebhookCertsSelf or WebhookCertsExternal.
	Certs string
}

// The values of WebhookOptions.Certs (-webhook-certs).
const (
	// WebhookCertsSelf: the replicas make and renew the certificates.
	WebhookCertsSelf = "self"
	// WebhookCertsExternal: another writer fills the Secret; the replicas
	// only copy its CA into the CRD's caBundle.
	WebhookCertsExternal = "external"
)

// robotsCRD is the name of the Robot CRD.
const robotsCRD = "robots." + robot.GroupName

// webhook is the conversion webhook as Run runs it.
type webhook struct {
	handler http.Handler
	tls     *tls.Config
	// upkeep keeps the served certificate up to date, the certificates
	// (unless -webhook-certs=external) and the CRD's caBundle, on every
	// replica, leader or not; ready says whether this replica has a
	// certificate to serve with. Both nil when the webhook is off.
	upkeep *webhookcert.Upkeep
	ready  func() error
}

// newWebhook builds the conversion webhook: its handler, its TLS
// configuration fed by the Secret, and the upkeep of its certificates.
func newWebhook(opts WebhookOptions, c *clients, registry prometheus.Registerer) (*webhook, error) {
	if opts.Addr == "" || opts.Addr == "0" {
		return &webhook{}, nil
	}
	conversionMetrics, err := metrics.NewConversionMetrics(registry)
	if err != nil {
		return nil, fmt.Errorf("registering the conversion metrics: %w", err)
	}
	handler, err := conversion.NewHandler(conversionMetrics.Observe, conversionMetrics.ObserveIgnored)
	if err != nil {
		return nil, err
	}
	source := &webhookcert.Source{}
	w := &webhook{handler: serving.WebhookHandler(handler), tls: source.TLSConfig(), ready: source.Ready}
	endpoint := webhookcert.Endpoint{ServiceNamespace: opts.Namespace, ServiceName: opts.Service, ServicePort: 443, Path: conversion.Path, URL: opts.URL}
	if _, err := endpoint.Hosts(); err != nil {
		return nil, fmt.Errorf("-webhook-url: %w", err)
	}
	w.upkeep = &webhookcert.Upkeep{
		Secret: webhookcert.NewSecretWatch(c.kube, opts.Namespace, opts.Secret, source),
		CRD:    webhookcert.NewCRDWatch(c.crds, robotsCRD),
	}
	w.upkeep.Manager = &webhookcert.Manager{
		Secrets:    c.kube.CoreV1().Secrets(opts.Namespace),
		SecretName: opts.Secret,
		CRDs:       c.crds.ApiextensionsV1().CustomResourceDefinitions(),
		CRDName:    robotsCRD,
		Endpoint:   endpoint,
		Now:        time.Now,
		External:   opts.Certs == WebhookCertsExternal,
	}
	return w, nil
}
