package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestVersionedWriterCheck: the check of scenario 10 passes for writes that
// pass, at once or after the webhook's errors, and for a refusal that says
// why; it fails for a write still failing when time is up, and for an error
// that is no API status.
func TestVersionedWriterCheck(t *testing.T) {
	webhookDown := apierrors.NewInternalError(errors.New(`conversion webhook for robot.dev/v1alpha1, Kind=Robot failed: Post "https://127.0.0.1:1/convert": EOF`))
	failing := func(errs ...error) func(context.Context) error {
		return func(context.Context) error {
			if len(errs) == 0 {
				return nil
			}
			err := errs[0]
			errs = errs[1:]
			return err
		}
	}
	ctx := t.Context()
	v := newVersionedWriter(nil, nil, 0, 1)
	if !v.write(ctx, "create", failing()) || !v.write(ctx, "create", failing(webhookDown, webhookDown)) {
		t.Fatal("a write that passes, at once or on a retry, reported as not passed")
	}
	if v.write(ctx, "change", failing(apierrors.NewInvalid(schema.GroupKind{Group: "robot.dev", Kind: "Robot"}, "x", nil))) {
		t.Fatal("a refused write reported as passed")
	}
	if c := v.check(); !c.ok {
		t.Errorf("writes that passed or were refused with a reason: the check failed: %s", c.detail)
	}
	if s := v.summary(); !strings.Contains(s, "2× create: Internal error occurred: conversion webhook") {
		t.Errorf("summary %q, want the webhook's error counted twice, its port left out", s)
	}

	lost := newVersionedWriter(nil, nil, 0, 1)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	lost.write(cancelled, "scale", failing(apierrors.NewServiceUnavailable("down"), nil))
	if c := lost.check(); c.ok || !strings.Contains(c.detail, "1 lost") {
		t.Errorf("a write still failing when time is up: the check passed, or did not say so: %s", c.detail)
	}

	unclear := newVersionedWriter(nil, nil, 0, 1)
	unclear.write(ctx, "scale", failing(errors.New("connection reset by peer")))
	if c := unclear.check(); c.ok || !strings.Contains(c.detail, "connection reset by peer") {
		t.Errorf("an error that is no API status: the check passed, or did not quote it: %s", c.detail)
	}
}
