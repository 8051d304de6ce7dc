package task

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitForTimesOut(t *testing.T) {
	calls := 0
	start := time.Now()
	err := WaitFor(context.Background(), 50*time.Millisecond, 10*time.Millisecond, "nothing", func() (bool, error) {
		calls++
		return false, nil
	})
	if err == nil || !strings.Contains(err.Error(), "timed out after 50ms waiting for nothing") {
		t.Fatalf("err = %v", err)
	}
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond {
		t.Errorf("gave up after %s, before the timeout", elapsed)
	}
	if calls < 2 {
		t.Errorf("cond called %d times", calls)
	}
}

func TestWaitForCondition(t *testing.T) {
	calls := 0
	err := WaitFor(context.Background(), time.Minute, time.Millisecond, "three calls", func() (bool, error) {
		calls++
		return calls == 3, nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err = %v after %d calls", err, calls)
	}
	boom := errors.New("boom")
	if err := WaitFor(context.Background(), time.Minute, time.Millisecond, "an error", func() (bool, error) { return false, boom }); err != boom {
		t.Errorf("err = %v, want cond's", err)
	}
}

func TestWaitForContextDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := WaitFor(ctx, time.Minute, 5*time.Millisecond, "never", func() (bool, error) { return false, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's", err)
	}
}

func TestParallel(t *testing.T) {
	var seen [100]atomic.Int32
	if err := Parallel(context.Background(), len(seen), 7, func(_ context.Context, i int) error {
		seen[i].Add(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Errorf("fn(%d) ran %d times", i, n)
		}
	}
	boom := errors.New("boom")
	var ran atomic.Int32
	err := Parallel(context.Background(), 1000, 2, func(ctx context.Context, i int) error {
		ran.Add(1)
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
	if ran.Load() == 1000 {
		t.Error("every i ran after an error")
	}
}
