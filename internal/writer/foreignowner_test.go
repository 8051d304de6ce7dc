package writer

import (
	"testing"

	"github.com/robot-operator/robot-operator/internal/workload"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		{name: "a field under the invalid one", managed: []metav1.ManagedFieldsEntry{entry(workload.FieldManager, "", ours), entry("kubectl-edit", "", privileged)},
			invalidField: "spec.template.spec.containers[0].securityContext",
			field:        `spec.template.spec.containers[name="robot"].securityContext.privileged`, writer: "kubectl-edit"},
		{name: "the invalid field itself", managed: []metav1.ManagedFieldsEntry{entry("kubectl-edit", "", privileged)},
			invalidField: "spec.template.spec.containers[0].securityContext.privileged",
			field:        `spec.template.spec.containers[name="robot"].securityContext.privileged`, writer: "kubectl-edit"},
		{name: "only the operator's fields", managed: []metav1.ManagedFieldsEntry{entry(workload.FieldManager, "", ours)},
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
