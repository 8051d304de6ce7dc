package main

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestFightsBackOffAndEnd(t *testing.T) {
	f := newFights()
	uid := types.UID("d")
	at := func(s int) time.Time { return fixtureNow.Add(time.Duration(s) * time.Second) }

	// Two reverts are no fight.
	for _, s := range []int{0, 1} {
		if st := f.admit(uid, at(s)); st.inFight || st.wait != 0 || st.startsNow {
			t.Fatalf("revert %ds: %+v, want no fight", s, st)
		}
		if f.reverted(uid, at(s), "drift", "").inFight {
			t.Fatalf("revert %ds: in a fight", s)
		}
	}
	// The third within a minute starts one.
	if st := f.admit(uid, at(2)); !st.startsNow || st.wait != 0 {
		t.Fatalf("third revert: %+v, want one that starts a fight now", st)
	}
	started := f.reverted(uid, at(2), "spec.replicas is 5; the Robot asks for 2", "fighter")
	if !started.inFight || started.wait != fightFirstWait || started.writer != "fighter" {
		t.Fatalf("third revert: %+v; want a fight with %q, and %v to wait", started, "fighter", fightFirstWait)
	}
	// Each revert then waits twice as long as the one before, up to the bound.
	now := at(2)
	for _, want := range []time.Duration{30 * time.Second, time.Minute, fightMaxWait, fightMaxWait} {
		st := f.admit(uid, now.Add(time.Second))
		if !st.inFight || st.wait <= 0 || st.writer != "fighter" || !strings.HasPrefix(st.drift, "spec.replicas") {
			t.Fatalf("a second after a revert: %+v, want to wait, with what the fight started with", st)
		}
		now = now.Add(time.Second + st.wait)
		if st := f.admit(uid, now); st.wait != 0 {
			t.Fatalf("once the wait is over: still %v to wait", st.wait)
		}
		if st := f.reverted(uid, now, "another drift", "another"); st.wait != want || st.writer != "fighter" {
			t.Fatalf("after a revert in the fight: %+v; want %v to wait, with the writer the fight started with", st, want)
		}
	}
	// Held for less than fightCalm: still a fight; then it ends, and the
	// Deployment is forgotten.
	if st, endsIn := f.held(uid, now.Add(fightCalm-time.Second)); !st.inFight || endsIn != time.Second || st.writer != "fighter" {
		t.Fatalf("held %v: %+v, ends in %v; want still in the fight, ending in 1s", fightCalm-time.Second, st, endsIn)
	}
	if st, _ := f.held(uid, now.Add(fightCalm)); st.inFight {
		t.Fatalf("held %v: still in a fight", fightCalm)
	}
	if n := f.len(); n != 0 {
		t.Errorf("%d Deployments tracked after the fight ended, want 0", n)
	}
}

func TestRevertsFarApartAreNoFight(t *testing.T) {
	f := newFights()
	uid := types.UID("d")
	for i := range 10 {
		now := fixtureNow.Add(time.Duration(i) * (fightWindow / 2))
		if st := f.admit(uid, now); st.inFight || st.startsNow {
			t.Fatalf("revert %d, %v apart: %+v", i, fightWindow/2, st)
		}
		if f.reverted(uid, now, "drift", "").inFight {
			t.Fatalf("revert %d: in a fight", i)
		}
	}
	// A Deployment left alone for fightWindow is forgotten.
	f.held(uid, fixtureNow.Add(10*fightWindow))
	if n := f.len(); n != 0 {
		t.Errorf("%d Deployments tracked, want 0", n)
	}
}
