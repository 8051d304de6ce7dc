package fleet

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// robots returns n Robots, r0 to r(n-1).
func robots(n int) []Robot {
	var out []Robot
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		out = append(out, Robot{UID: types.UID("uid-" + name), Namespace: "ns", Name: name})
	}
	return out
}

// newBudget returns a budget of limit slots and the Robots it woke, in
// order.
func newBudget(limit int) (*Budget, *[]string) {
	woken := &[]string{}
	return New(limit, func(r Robot) { *woken = append(*woken, r.Name) }), woken
}

// TestFirstComeFirstServed: the first limit Robots roll, the others wait in
// the order they came, and each slot that frees goes to the first in line,
// which is queued; a Robot further back that asks again does not jump the
// line.
func TestFirstComeFirstServed(t *testing.T) {
	b, woken := newBudget(2)
	rs := robots(5)
	for i, r := range rs {
		err := b.Admit(r)
		if want := i < 2; (err == nil) != want {
			t.Fatalf("Admit(%s) = %v; want admitted %v", r.Name, err, want)
		}
	}
	var wait *WaitError
	if err := b.Admit(rs[4]); !errors.As(err, &wait) || wait.Position != 3 || wait.Rolling != 2 || wait.Waiting != 3 || wait.Limit != 2 {
		t.Fatalf("Admit(r4) again = %#v; want waiting third in line, 2 rolling and 3 waiting of a budget of 2", err)
	}
	if rolling, waiting := b.Counts(); rolling != 2 || waiting != 3 {
		t.Errorf("Counts() = %d, %d; want 2, 3", rolling, waiting)
	}
	// Not done: nothing frees.
	b.Settle(rs[0].UID, false, false)
	if len(*woken) != 0 {
		t.Fatalf("woken %v before any rollout is done", *woken)
	}
	b.Settle(rs[1].UID, false, true)
	if !slices.Equal(*woken, []string{"r2"}) {
		t.Fatalf("woken %v once r1 is done; want [r2], the first in line", *woken)
	}
	// r2 holds the slot it was given; r4 still waits behind r3.
	if err := b.Admit(rs[4]); err == nil {
		t.Error("r4 took a slot ahead of r3")
	}
	if err := b.Admit(rs[2]); err != nil {
		t.Errorf("r2, given the slot, is refused: %v", err)
	}
	b.Settle(rs[0].UID, false, true)
	b.Settle(rs[2].UID, false, true)
	if !slices.Equal(*woken, []string{"r2", "r3", "r4"}) {
		t.Errorf("woken %v; want r2, r3, r4 in that order", *woken)
	}
	if rolling, waiting := b.Counts(); rolling != 2 || waiting != 0 {
		t.Errorf("Counts() = %d, %d; want 2 rolling (r3, r4), none waiting", rolling, waiting)
	}
}

// TestNeverMoreThanTheLimit: however Robots come and go, no more than the
// limit hold slots at once.
func TestNeverMoreThanTheLimit(t *testing.T) {
	b, _ := newBudget(3)
	rs := robots(20)
	for round := range 40 {
		for i, r := range rs {
			if (i+round)%3 == 0 {
				_ = b.Admit(r)
			}
			if (i*7+round)%5 == 0 {
				b.Settle(r.UID, true, true)
			}
			if rolling, _ := b.Counts(); rolling > 3 {
				t.Fatalf("round %d: %d Robots roll, over the budget of 3", round, rolling)
			}
		}
	}
}

// TestDeletedRobotFreesItsSlot: a deleted Robot's slot goes to the first in
// line, and a deleted waiting Robot leaves the line.
func TestDeletedRobotFreesItsSlot(t *testing.T) {
	b, woken := newBudget(1)
	rs := robots(3)
	for _, r := range rs {
		_ = b.Admit(r)
	}
	b.Forget(rs[1].UID)
	if _, waiting := b.Counts(); waiting != 1 {
		t.Errorf("%d waiting after the waiting r1 was deleted; want 1", waiting)
	}
	b.Forget(rs[0].UID)
	if !slices.Equal(*woken, []string{"r2"}) {
		t.Errorf("woken %v once the rolling r0 was deleted; want [r2]", *woken)
	}
}

// TestSpecChangeLeavesTheLine: a waiting Robot whose own spec changed is
// applied at once and leaves the line, whoever waits before it; a Robot
// whose change vanished (Settle, not waiting) leaves it too.
func TestSpecChangeLeavesTheLine(t *testing.T) {
	b, woken := newBudget(1)
	rs := robots(4)
	for _, r := range rs {
		_ = b.Admit(r)
	}
	b.Bypass(rs[2].UID)
	b.Settle(rs[3].UID, false, true)
	if rolling, waiting := b.Counts(); rolling != 1 || waiting != 1 {
		t.Errorf("Counts() = %d, %d; want r0 rolling and r1 alone waiting", rolling, waiting)
	}
	b.Settle(rs[0].UID, false, true)
	if !slices.Equal(*woken, []string{"r1"}) {
		t.Errorf("woken %v; want [r1]", *woken)
	}
	// A waiting Robot told it still waits keeps its place.
	_ = b.Admit(rs[2])
	b.Settle(rs[2].UID, true, true)
	if _, waiting := b.Counts(); waiting != 1 {
		t.Errorf("a Robot still waiting left the line")
	}
}

// TestRebuild: the Robots a new leader finds rolling hold slots before any
// other is admitted, even beyond the limit.
func TestRebuild(t *testing.T) {
	b, woken := newBudget(2)
	rs := robots(4)
	b.Rebuild(rs[:3])
	if err := b.Admit(rs[3]); err == nil {
		t.Fatal("a Robot was admitted while 3 rebuilt holders fill a budget of 2")
	}
	b.Settle(rs[0].UID, false, true)
	if len(*woken) != 0 {
		t.Errorf("woken %v with 2 holders left of a budget of 2", *woken)
	}
	b.Settle(rs[1].UID, false, true)
	if !slices.Equal(*woken, []string{"r3"}) {
		t.Errorf("woken %v; want [r3]", *woken)
	}
}

// TestNoLimit: a budget of 0, or none, admits every change and holds
// nothing.
func TestNoLimit(t *testing.T) {
	for _, b := range []*Budget{New(0, nil), nil} {
		for _, r := range robots(50) {
			if err := b.Admit(r); err != nil {
				t.Fatalf("Admit = %v with no limit", err)
			}
		}
		b.Rebuild(robots(3))
		if rolling, waiting := b.Counts(); rolling != 0 || waiting != 0 {
			t.Errorf("Counts() = %d, %d with no limit; want 0, 0", rolling, waiting)
		}
	}
}
