package main

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

func TestForeignOwner(t *testing.T) {
	entry := func(manager, subresource, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	const privileged = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"robot\"}":{"f:securityContext":{"f:privileged":{}}}}}}}}`
	const ours = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"robot\"}":{"f:securityContext":{"f:allowPrivilegeEscalation":{}}}}}}}}`
	tests := []struct {
		name          string
		managed       []metav1.ManagedFieldsEntry
		invalidField  string
		field, writer string
	}{
		{name: "a field under the invalid one", managed: []metav1.ManagedFieldsEntry{entry(fieldManager, "", ours), entry("kubectl-edit", "", privileged)},
			invalidField: "spec.template.spec.containers[0].securityContext",
			field:        `spec.template.spec.containers[name="robot"].securityContext.privileged`, writer: "kubectl-edit"},
		{name: "the invalid field itself", managed: []metav1.ManagedFieldsEntry{entry("kubectl-edit", "", privileged)},
			invalidField: "spec.template.spec.containers[0].securityContext.privileged",
			field:        `spec.template.spec.containers[name="robot"].securityContext.privileged`, writer: "kubectl-edit"},
		{name: "only the operator's fields", managed: []metav1.ManagedFieldsEntry{entry(fieldManager, "", ours)},
			invalidField: "spec.template.spec.containers[0].securityContext"},
		{name: "another writer elsewhere", managed: []metav1.ManagedFieldsEntry{entry("kubectl-edit", "", privileged)},
			invalidField: "spec.template.spec.containers[0].env[0].name"},
		{name: "a status writer", managed: []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "status", privileged)},
			invalidField: "spec.template.spec.containers[0].securityContext"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, writer := foreignOwner(tt.managed, tt.invalidField)
			if field != tt.field || writer != tt.writer {
				t.Errorf("foreignOwner = %q, %q; want %q, %q", field, writer, tt.field, tt.writer)
			}
		})
	}
}

// TestClassify: each kind of sync error, its reason and what happens next,
// from the one table the sync, the conditions and the warnings read.
func TestClassify(t *testing.T) {
	tests := []struct {
		err    error
		reason string
		retry  retry
		warns  bool
	}{
		{errors.New("connection refused"), robotv1alpha1.ReasonSyncFailed, retryWithBackoff, false},
		{&syncTimeoutError{}, robotv1alpha1.ReasonSyncFailed, retryWithBackoff, false},
		{&invalidSpecError{errors.New("bad")}, robotv1alpha1.ReasonInvalidSpec, retryOnChange, true},
		{&nameTakenError{name: "x"}, robotv1alpha1.ReasonDeploymentNameTaken, recheckLater, true},
		{&serviceNameTakenError{name: "x"}, robotv1alpha1.ReasonServiceNameTaken, recheckLater, true},
		{&earlierRobotError{name: "x"}, robotv1alpha1.ReasonWaitingForGarbageCollection, recheckLater, false},
		{&earlierRobotError{name: "x", kind: "Service"}, robotv1alpha1.ReasonWaitingForGarbageCollection, recheckLater, false},
		{&fieldConflictError{deployment: "x", field: "f", manager: "m", err: errors.New("invalid")}, robotv1alpha1.ReasonFieldConflict, retryWithBackoff, true},
	}
	for _, tt := range tests {
		f := classify(tt.err)
		if f.reason != tt.reason || f.retry != tt.retry || warnsOnEntry(f.reason) != tt.warns {
			t.Errorf("%T: reason %s, retry %d, warns %v; want %s, %d, %v", tt.err, f.reason, f.retry, warnsOnEntry(f.reason), tt.reason, tt.retry, tt.warns)
		}
	}
}
