package localcluster

import (
	"reflect"
	"testing"
)

func TestEstablished(t *testing.T) {
	for _, tc := range []struct {
		json string
		want bool
	}{
		{`{"status":{}}`, false},
		{`{"status":{"conditions":[{"type":"NamesAccepted","status":"True"}]}}`, false},
		{`{"status":{"conditions":[{"type":"NamesAccepted","status":"True"},{"type":"Established","status":"False"}]}}`, false},
		{`{"status":{"conditions":[{"type":"NamesAccepted","status":"True"},{"type":"Established","status":"True"}]}}`, true},
	} {
		got, err := Established([]byte(tc.json))
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.json, got, err, tc.want)
		}
	}
	if _, err := Established([]byte("not json")); err == nil {
		t.Error("no error for a reply that is not JSON")
	}
}

func TestParseToolsEnv(t *testing.T) {
	got := ParseToolsEnv("KUBECTL=/a/kubectl\nKWOKCTL=/a/kwokctl=x\nnoise\n")
	want := map[string]string{"KUBECTL": "/a/kubectl", "KWOKCTL": "/a/kwokctl=x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
