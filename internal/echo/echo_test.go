package echo

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func robotAt(uid, resourceVersion string) *robotv1beta1.Robot {
	return &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: types.UID(uid), ResourceVersion: resourceVersion}}
}

func TestRecentWritesIsOwnWrite(t *testing.T) {
	var written RecentWrites[*robotv1beta1.Robot]
	if written.IsOwnWrite(robotAt("a", "5")) {
		t.Fatal("nothing written yet, but an event was taken for an own write")
	}
	written.Remember(robotAt("a", "5"))
	if written.IsOwnWrite(robotAt("a", "4")) {
		t.Error("an older version was taken for the own write")
	}
	if written.IsOwnWrite(robotAt("b", "5")) {
		t.Error("another object with the same resourceVersion was taken for the own write")
	}
	if !written.IsOwnWrite(robotAt("a", "5")) {
		t.Fatal("the echo of the own write was not recognized")
	}
	// Recognized once, the write is forgotten: the cache holds it now.
	if written.IsOwnWrite(robotAt("a", "5")) {
		t.Error("the own write was still remembered after its echo")
	}
	if got := written.Freshest(robotAt("a", "3")); got.ResourceVersion != "3" {
		t.Errorf("freshest after the echo = version %s, want the cached 3", got.ResourceVersion)
	}
}

func TestRecentWritesFreshest(t *testing.T) {
	var written RecentWrites[*robotv1beta1.Robot]
	written.Remember(robotAt("a", "10"))
	if got := written.Freshest(robotAt("a", "9")); got.ResourceVersion != "10" {
		t.Errorf("stale cache: freshest = version %s, want the written 10", got.ResourceVersion)
	}
	if got := written.Freshest(robotAt("a", "11")); got.ResourceVersion != "11" {
		t.Errorf("cache caught up: freshest = version %s, want the cached 11", got.ResourceVersion)
	}
	// Caught up, the written object is dropped: a later stale read cannot
	// bring it back.
	if got := written.Freshest(robotAt("a", "9")); got.ResourceVersion != "9" {
		t.Errorf("after catching up: freshest = version %s, want 9", got.ResourceVersion)
	}
}
