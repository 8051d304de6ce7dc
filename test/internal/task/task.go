// Package task waits for conditions and runs work concurrently, for the
// programs under test/.
package task

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// WaitFor polls cond every interval until it is true or timeout passes. It
// returns cond's first error, an error naming what when timeout passes,
// or ctx's error when ctx is done first.
func WaitFor(ctx context.Context, timeout, interval time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// Parallel runs fn(0..n-1) on c goroutines and returns the first error;
// after an error the context fn gets is cancelled and no new i is started.
func Parallel(ctx context.Context, n, c int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}
