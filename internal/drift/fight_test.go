package drift

import (
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"

	"k8s.io/apimachinery/pkg/types"
)

func TestFightsBackOffAndEnd(t *testing.T) {
	f := NewFights()
	uid := types.UID("d")
	at := func(s int) time.Time { return robottest.FixtureNow.Add(time.Duration(s) * time.Second) }

	// Two reverts are no fight.
	for _, s := range []int{0, 1} {
		if st := f.Admit(uid, at(s)); st.InFight || st.Wait != 0 || st.StartsNow {
			t.Fatalf("revert %ds: %+v, want no fight", s, st)
		}
		if f.Reverted(uid, at(s), "drift", "").InFight {
			t.Fatalf("revert %ds: in a fight", s)
		}
	}
	// The third within a minute starts one.
	if st := f.Admit(uid, at(2)); !st.StartsNow || st.Wait != 0 {
		t.Fatalf("third revert: %+v, want one that starts a fight now", st)
	}
	started := f.Reverted(uid, at(2), "spec.replicas is 5; the Robot asks for 2", "fighter")
	if !started.InFight || started.Wait != fightFirstWait || started.Writer != "fighter" {
		t.Fatalf("third revert: %+v; want a fight with %q, and %v to wait", started, "fighter", fightFirstWait)
	}
	// Each revert then waits twice as long as the one before, up to the bound.
	now := at(2)
	for _, want := range []time.Duration{30 * time.Second, time.Minute, FightMaxWait, FightMaxWait} {
		st := f.Admit(uid, now.Add(time.Second))
		if !st.InFight || st.Wait <= 0 || st.Writer != "fighter" || !strings.HasPrefix(st.Drift, "spec.replicas") {
			t.Fatalf("a second after a revert: %+v, want to wait, with what the fight started with", st)
		}
		now = now.Add(time.Second + st.Wait)
		if st := f.Admit(uid, now); st.Wait != 0 {
			t.Fatalf("once the wait is over: still %v to wait", st.Wait)
		}
		if st := f.Reverted(uid, now, "another drift", "another"); st.Wait != want || st.Writer != "fighter" {
			t.Fatalf("after a revert in the fight: %+v; want %v to wait, with the writer the fight started with", st, want)
		}
	}
	// Held for less than FightCalm: still a fight; then it ends, and the
	// Deployment is forgotten.
	if st, endsIn := f.Held(uid, now.Add(FightCalm-time.Second)); !st.InFight || endsIn != time.Second || st.Writer != "fighter" {
		t.Fatalf("held %v: %+v, ends in %v; want still in the fight, ending in 1s", FightCalm-time.Second, st, endsIn)
	}
	if st, _ := f.Held(uid, now.Add(FightCalm)); st.InFight {
		t.Fatalf("held %v: still in a fight", FightCalm)
	}
	if n := f.Len(); n != 0 {
		t.Errorf("%d Deployments tracked after the fight ended, want 0", n)
	}
}

func TestRevertsFarApartAreNoFight(t *testing.T) {
	f := NewFights()
	uid := types.UID("d")
	for i := range 10 {
		now := robottest.FixtureNow.Add(time.Duration(i) * (fightWindow / 2))
		if st := f.Admit(uid, now); st.InFight || st.StartsNow {
			t.Fatalf("revert %d, %v apart: %+v", i, fightWindow/2, st)
		}
		if f.Reverted(uid, now, "drift", "").InFight {
			t.Fatalf("revert %d: in a fight", i)
		}
	}
	// A Deployment left alone for fightWindow is forgotten.
	f.Held(uid, robottest.FixtureNow.Add(10*fightWindow))
	if n := f.Len(); n != 0 {
		t.Errorf("%d Deployments tracked, want 0", n)
	}
}
