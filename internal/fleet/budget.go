package fleet

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Robot is a Robot as the budget knows it: its UID, which a Robot created
// again under the same name does not share, and its name, to queue it.
type Robot struct {
	UID             types.UID
	Namespace, Name string
}

// Budget lets at most Limit Robots at a time roll a change of their pod
// template that does not come from their spec. A Robot takes a slot when
// its change is let through, and holds it until its Deployment's rollout is
// over (Settle) or the Robot is deleted (Forget). The others wait, first
// come first served; when a slot frees, the first waiting Robot takes it
// and is queued (Wake), so that nothing polls.
type Budget struct {
	limit int
	// wake queues a Robot that was given a slot.
	wake func(Robot)

	mu      sync.Mutex
	rolling map[types.UID]Robot
	waiting []Robot
}

// New returns a budget of limit slots, which queues each Robot it gives a
// slot with wake. A limit of 0 lets every change through at once, and
// holds nothing.
func New(limit int, wake func(Robot)) *Budget {
	return &Budget{limit: limit, wake: wake, rolling: map[types.UID]Robot{}}
}

// Limit returns how many Robots may roll at once; 0 for no limit.
func (b *Budget) Limit() int {
	if b == nil {
		return 0
	}
	return b.limit
}

// Admit asks for a slot for robot, whose Deployment has a change that does
// not come from its spec to roll. It returns nil when robot may roll it
// now: it holds a slot, or took a free one that nobody waited for before
// it. Otherwise robot waits in line, and Admit returns why, for its
// status.
func (b *Budget) Admit(robot Robot) error {
	if b == nil || b.limit <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.rolling[robot.UID]; ok {
		return nil
	}
	if !b.isWaiting(robot.UID) {
		if len(b.waiting) == 0 && len(b.rolling) < b.limit {
			b.rolling[robot.UID] = robot
			return nil
		}
		b.waiting = append(b.waiting, robot)
	}
	return &WaitError{Limit: b.limit, Rolling: len(b.rolling), Waiting: len(b.waiting), Position: b.position(robot.UID)}
}

// Bypass takes the Robot uid out of the line: a change of its own spec is
// applied now, with whatever else changed, and never waits. A slot it holds
// stays its own until its rollout is over.
func (b *Budget) Bypass(uid types.UID) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropWaiting(uid)
}

// Settle is told, after each sync of the Robot uid's Deployment that ended
// well or waiting, whether the Robot still waits (waiting: its change was
// held), and whether its Deployment's rollout is over (done). A Robot whose
// rollout is over frees its slot; one that no longer has a change to wait
// for leaves the line.
func (b *Budget) Settle(uid types.UID, waiting, done bool) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !waiting {
		b.dropWaiting(uid)
	}
	if _, ok := b.rolling[uid]; ok && done {
		delete(b.rolling, uid)
	}
	b.fill()
}

// Forget drops the Robot uid, deleted: its slot, if it held one, goes to
// the first in line.
func (b *Budget) Forget(uid types.UID) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.rolling, uid)
	b.dropWaiting(uid)
	b.fill()
}

// Rebuild gives holders their slots, as a leader does once its caches have
// synced and before it syncs any Robot: their Deployments still roll a
// change the previous leader let through. There may be more of them than
// the limit (a lower -fleet-rollout-budget than before): no other Robot
// then takes a slot until enough are done.
func (b *Budget) Rebuild(holders []Robot) {
	if b == nil || b.limit <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, robot := range holders {
		b.rolling[robot.UID] = robot
	}
}

// Counts returns how many Robots hold a slot, and how many wait for one.
func (b *Budget) Counts() (rolling, waiting int) {
	if b == nil {
		return 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.rolling), len(b.waiting)
}

// fill gives the free slots to the first in line, and queues them.
func (b *Budget) fill() {
	for len(b.waiting) > 0 && len(b.rolling) < b.limit {
		next := b.waiting[0]
		b.waiting = b.waiting[1:]
		b.rolling[next.UID] = next
		if b.wake != nil {
			b.wake(next)
		}
	}
}

func (b *Budget) isWaiting(uid types.UID) bool { return b.position(uid) > 0 }

// position returns uid's place in line, from 1; 0 when it does not wait.
func (b *Budget) position(uid types.UID) int {
	return slices.IndexFunc(b.waiting, func(r Robot) bool { return r.UID == uid }) + 1
}

func (b *Budget) dropWaiting(uid types.UID) {
	b.waiting = slices.DeleteFunc(b.waiting, func(r Robot) bool { return r.UID == uid })
}

// WaitError says that a Robot waits for a slot of the budget, and where it
// stands.
type WaitError struct {
	Limit, Rolling, Waiting, Position int
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("a change of the pod template that does not come from the Robot's spec (a new default of the operator, say) "+
		"waits for the fleet budget: at most %d Robots roll such a change at a time (-fleet-rollout-budget), each until its rollout is over; "+
		"%d were rolling and %d waiting when this Robot was queued, %d in line. The Deployment keeps its template meanwhile; "+
		"a change of the Robot's own spec is not held", e.Limit, e.Rolling, e.Waiting, e.Position)
}
