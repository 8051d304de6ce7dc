package conversion

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// storedRobot is a Robot as the API server holds it once the operator has
// written its status, as v1alpha1's watch cache sends it for conversion at
// each write: the managedFields of its creator and of the operator's
// status, and the conditions of a Ready Robot.
const storedRobot = `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"creationTimestamp":"2026-11-28T14:50:31Z","generation":1,` +
	`"managedFields":[{"apiVersion":"robot.dev/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:image":{},"f:ports":{},"f:replicas":{},` +
	`"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:service":{".":{},"f:type":{}}}},` +
	`"manager":"bench","operation":"Update","time":"2026-11-28T14:50:31Z"},` +
	`{"apiVersion":"robot.dev/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:availableReplicas":{},"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},` +
	`"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Synced\"}":{".":{},` +
	`"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:deploymentName":{},"f:observedGeneration":{},` +
	`"f:readyReplicas":{},"f:replicas":{},"f:selector":{},"f:serviceName":{},"f:updatedReplicas":{}}},"manager":"robot-operator","operation":"Apply",` +
	`"subresource":"status","time":"2026-11-28T14:50:33Z"}],"name":"robot-00042","namespace":"bench-3","resourceVersion":"48213",` +
	`"uid":"4c1f6a2e-8d0b-4f7e-9a51-0c3b2d7e9f10"},"spec":{"image":"registry.example/robot:1.0","ports":[{"containerPort":8080,"name":"http","protocol":"TCP"}],` +
	`"replicas":1,"resources":{"limits":{"cpu":"100m","memory":"64Mi"},"requests":{"cpu":"10m","memory":"16Mi"}},"service":{"type":"ClusterIP"}},` +
	`"status":{"availableReplicas":1,"conditions":[{"lastTransitionTime":"2026-11-28T14:50:33Z","message":"1 of 1 replicas are available",` +
	`"observedGeneration":1,"reason":"Available","status":"True","type":"Ready"},{"lastTransitionTime":"2026-11-28T14:50:33Z",` +
	`"message":"Deployment robot-00042 and Service robot-00042 are as the Robot asks","observedGeneration":1,"reason":"Synced","status":"True","type":"Synced"}],` +
	`"deploymentName":"robot-00042","observedGeneration":1,"readyReplicas":1,"replicas":1,"selector":"app.kubernetes.io/instance=robot-00042",` +
	`"serviceName":"robot-00042","updatedReplicas":1}}`

// BenchmarkConvertAStoredRobot serves one review of a stored Robot,
// converted from v1beta1 to v1alpha1, as the API server asks for each Robot
// it writes while v1alpha1 is served: its CPU and allocations are the
// operator's for each such write.
func BenchmarkConvertAStoredRobot(b *testing.B) {
	handler, err := NewHandler(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"bench","desiredAPIVersion":"robot.dev/v1alpha1",` +
		`"objects":[` + storedRobot + `]}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		request := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
		request.Header.Set("Content-Type", "application/json")
		recorder := httptest.NewRecorder()
		handler.ServeHTTP(recorder, request)
		if recorder.Code != http.StatusOK || !bytes.Contains(recorder.Body.Bytes(), []byte(`"status":"Success"`)) {
			b.Fatalf("status %d: %s", recorder.Code, recorder.Body)
		}
	}
}
