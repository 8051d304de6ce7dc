package drift

import (
	"slices"
	"sync"
	"time"

	"github.com/robot-operator/robot-operator/internal/workload"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Another writer that keeps changing what a Robot sets on its Deployment (a
// script, another controller, a HorizontalPodAutoscaler aimed at the
// Deployment rather than the Robot) would have the operator revert it as
// often as it writes, forever. Each revert is still right, but a fight must
// not cost the API server a write per second per Robot. So reverts of the
// same Deployment are counted: a few in a short while make a fight, and
// during a fight each revert waits longer than the one before, up to a
// bound. The Robot says so (Synced=False, DeploymentContested, naming the
// other writer's field manager) and the fight ends, by itself, once a revert
// has held for FightCalm.
const (
	// fightReverts reverts of one Deployment within fightWindow make a
	// fight. A person's `kubectl edit` or `kubectl scale` of an owned
	// Deployment costs one or two.
	fightReverts = 3
	fightWindow  = time.Minute
	// fightFirstWait is how long the first revert in a fight waits, and
	// FightMaxWait how long any may: a fight costs a few writes in its first
	// minute, then one a minute, and a revert is at most a minute late once
	// the other writer stops.
	fightFirstWait = 15 * time.Second
	FightMaxWait   = time.Minute
	// FightCalm is how long a revert must hold for a fight to end.
	FightCalm = 30 * time.Second
)

// Fights tracks reverts per Deployment (by UID), and the fights they make.
// It is safe for concurrent use; its size is bounded by the Deployments
// reverted within the last fightWindow plus those in a fight, and an entry
// goes with its Deployment.
type Fights struct {
	mu           sync.Mutex
	byDeployment map[types.UID]*fight
}

// fight is what is known of the reverts of one Deployment.
type fight struct {
	reverts []time.Time // within fightWindow of the last, oldest first
	// wait, when not zero, is how long the next revert waits after the
	// last: the Deployment is in a fight.
	wait time.Duration
	// drift and writer are what the other writer changed and its field
	// manager, as seen when the fight started: the Robot's status says
	// them, and stays the same through the fight.
	drift, writer string
}

func NewFights() *Fights {
	return &Fights{byDeployment: map[types.UID]*fight{}}
}

// fightState is what admit tells of a Deployment about to be reverted.
type fightState struct {
	InFight bool
	// Wait is how long until the revert may be made; zero if now.
	Wait time.Duration
	// StartsNow reports whether this revert starts a fight.
	StartsNow     bool
	Drift, Writer string
}

// Admit tells whether the Deployment with uid may be reverted at now, and
// what is known of its fight.
func (f *Fights) Admit(uid types.UID, now time.Time) fightState {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.byDeployment[uid]
	if ft == nil {
		return fightState{StartsNow: fightReverts <= 1}
	}
	if ft.wait == 0 {
		recent := 0
		for _, t := range ft.reverts {
			if now.Sub(t) < fightWindow {
				recent++
			}
		}
		return fightState{StartsNow: recent+1 >= fightReverts}
	}
	next := ft.reverts[len(ft.reverts)-1].Add(ft.wait)
	return fightState{InFight: true, Wait: max(next.Sub(now), 0), Drift: ft.drift, Writer: ft.writer}
}

// Reverted records a revert of the Deployment with uid at now, of drift by
// writer. It returns what is known of its fight, if it is in one: wait is
// then how long the next revert will wait.
func (f *Fights) Reverted(uid types.UID, now time.Time, drift, writer string) fightState {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.byDeployment[uid]
	if ft == nil {
		ft = &fight{}
		f.byDeployment[uid] = ft
	}
	ft.reverts = append(ft.reverts, now)
	if i := slices.IndexFunc(ft.reverts, func(t time.Time) bool { return now.Sub(t) < fightWindow }); i > 0 {
		ft.reverts = slices.Delete(ft.reverts, 0, i)
	}
	switch {
	case ft.wait > 0:
		ft.wait = min(2*ft.wait, FightMaxWait)
	case len(ft.reverts) >= fightReverts:
		ft.wait, ft.drift, ft.writer = fightFirstWait, drift, writer
	default:
		return fightState{}
	}
	return fightState{InFight: true, Wait: ft.wait, Drift: ft.drift, Writer: ft.writer}
}

// Held records that the Deployment with uid holds what its Robot asks for at
// now. A fight ends once the last revert has held for FightCalm; held reports whether the Deployment is still in one, what is
// known of it, and how long until it can end.
func (f *Fights) Held(uid types.UID, now time.Time) (state fightState, endsIn time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.byDeployment[uid]
	if ft == nil {
		return fightState{}, 0
	}
	last := ft.reverts[len(ft.reverts)-1]
	if ft.wait > 0 {
		if end := last.Add(FightCalm); now.Before(end) {
			return fightState{InFight: true, Drift: ft.drift, Writer: ft.writer}, end.Sub(now)
		}
		delete(f.byDeployment, uid)
		return fightState{}, 0
	}
	if now.Sub(last) >= fightWindow {
		delete(f.byDeployment, uid)
	}
	return fightState{}, 0
}

// Forget drops what is known of the Deployment with uid: it was deleted.
func (f *Fights) Forget(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.byDeployment, uid)
}

// Len is the number of Deployments tracked.
func (f *Fights) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.byDeployment)
}

// LastForeignWriter returns the field manager of the writer other than the
// operator that changed object last, per its managedFields: the one a fight
// is with. Status writes (the Deployment controller's) do not count; writes
// through the scale subresource (kubectl scale, an autoscaler) do.
func LastForeignWriter(object metav1.Object) string {
	var writer string
	var at time.Time
	for _, e := range object.GetManagedFields() {
		if e.Manager == workload.FieldManager || e.Subresource == "status" || e.Time == nil {
			continue
		}
		if writer == "" || e.Time.After(at) {
			writer, at = e.Manager, e.Time.Time
		}
	}
	return writer
}
