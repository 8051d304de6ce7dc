package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// cpuUse is CPU time per process, by name.
type cpuUse map[string]time.Duration

// cpuNow reads the CPU time so far of every cluster component, of the
// extra processes given, and of the whole machine ("machine": busy time
// summed over all cores).
func (c *cluster) cpuNow(extra map[string]int) cpuUse {
	pids := map[string]int{}
	home, _ := os.UserHomeDir()
	files, _ := filepath.Glob(filepath.Join(home, ".kwok", "clusters", c.env.cfg.cluster, "pids", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			pids[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
		}
	}
	for name, pid := range extra {
		pids[name] = pid
	}
	use := cpuUse{"machine": machineBusy()}
	for name, pid := range pids {
		if d, ok := processCPU(pid); ok {
			use[name] = d
		}
	}
	return use
}

// since is the CPU each process used between start and u.
func (u cpuUse) since(start cpuUse) cpuUse {
	d := cpuUse{}
	for name, t := range u {
		if t0, ok := start[name]; ok {
			d[name] = t - t0
		}
	}
	return d
}

// String lists the machine's busy time first, then each process, most
// CPU first.
func (u cpuUse) String() string {
	names := make([]string, 0, len(u))
	for name := range u {
		if name != "machine" {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool { return u[names[i]] > u[names[j]] })
	parts := []string{fmt.Sprintf("all: %.1f", u["machine"].Seconds())}
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, u[name].Seconds()))
	}
	return strings.Join(parts, "<br>")
}

// processCPU is a process's user plus system time, all threads.
func processCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name may hold spaces; the fields after it do not.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// fields[0] is the state (field 3); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * clockTick, true
}

// machineBusy is the time all cores spent not idle, from /proc/stat.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, f := range fields[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		// user nice system idle iowait irq softirq steal (guest is in user)
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += v
	}
	return time.Duration(busy) * clockTick
}

// profileAPIServer records a CPU profile of the API server for d, from now,
// into the file named name in the scratch directory, when -profile is set.
// It returns at once; wait blocks until the profile is written.
func (c *cluster) profileAPIServer(ctx context.Context, name string, d time.Duration) (wait func()) {
	return c.env.recordProfile(name, "the API server", c.apiServerProfile(ctx, d))
}

// profileAPIServerPhase records the API server's CPU from now until stop is
// called, when -profile is set: -profile-length of it, or with
// -profile-length=0 the whole phase (see recordPhaseProfiles).
func (c *cluster) profileAPIServerPhase(ctx context.Context, name string) (stop func()) {
	return c.env.recordPhaseProfiles(ctx, name, "the API server", c.apiServerProfile)
}

// apiServerProfile fetches a CPU profile of the API server of d from now.
func (c *cluster) apiServerProfile(ctx context.Context, d time.Duration) func() ([]byte, error) {
	return func() ([]byte, error) {
		return c.Kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(d.Seconds()))).DoRaw(ctx)
	}
}

// phaseProfileWindow is the length of each of the consecutive profiles that
// -profile-length=0 records over a phase: short, so that stopping waits for
// little, and long enough that pprof's own start and stop cost nothing.
const phaseProfileWindow = 10 * time.Second

// recordPhaseProfiles records CPU profiles from now, when -profile is set.
// With -profile-length above 0 it records that long, into name, and stop
// waits for it. With -profile-length=0 it records consecutive windows of
// phaseProfileWindow into name with -001, -002, … before its extension
// until stop is called, which waits for the window under way: every second
// of the phase is in one file, and `go tool pprof -top FILE…` adds them up.
func (e *environment) recordPhaseProfiles(ctx context.Context, name, what string, profile func(context.Context, time.Duration) func() ([]byte, error)) (stop func()) {
	if !e.cfg.profile {
		return func() {}
	}
	if e.cfg.profileLength > 0 {
		var once sync.Once
		wait := e.recordProfile(name, what, profile(ctx, e.cfg.profileLength))
		return func() { once.Do(wait) }
	}
	stopping := make(chan struct{})
	done := make(chan struct{})
	ext := filepath.Ext(name)
	go func() {
		defer close(done)
		for i := 1; ; i++ {
			e.recordProfile(fmt.Sprintf("%s-%03d%s", strings.TrimSuffix(name, ext), i, ext), what, profile(ctx, phaseProfileWindow))()
			select {
			case <-stopping:
				return
			case <-ctx.Done():
				return
			default:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stopping)
			<-done
		})
	}
}

// recordProfile runs fetch in the background, when -profile is set, and
// writes what it returns into the file named name in the scratch directory.
// wait blocks until that is done.
func (e *environment) recordProfile(name, what string, fetch func() ([]byte, error)) (wait func()) {
	if !e.cfg.profile {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body, err := fetch()
		path := filepath.Join(e.Out, name)
		if err == nil {
			err = os.WriteFile(path, body, 0o644)
		}
		if err != nil {
			logf("profiling %s: %v", what, err)
			return
		}
		logf("wrote %s", path)
	}()
	return func() { <-done }
}
