package election

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Observe follows the election at path (a latch's or a selector's)
// without taking part, as etcd's Election.Observe does: the returned
// channel receives the leader first, then every change, in order (a
// Leader with an empty Node when nobody leads). It watches only the
// leader's node (a participant joining behind it wakes nobody), and reads
// again after each reconnection. The channel is closed when ctx ends or
// the client closes. Changes queue without bound while the reader is
// slow, so the observer never holds anything up.
func Observe(ctx context.Context, c *recipes.Client, path string) (<-chan Leader, error) {
	full, err := recipeargs.ReadPath(ctx, c, path)
	if err != nil {
		return nil, err
	}
	var out engine.Listeners[Leader]
	ch, _ := out.Subscribe()
	go func() {
		defer out.Close()
		observe(ctx, c, full, out.Post)
	}()
	return ch, nil
}

func observe(ctx context.Context, c *recipes.Client, full string, post func(Leader)) {
	states, stop := c.Subscribe()
	defer stop()
	var (
		last  Leader
		first = true
	)
	for {
		l, watch, err := readLeader(ctx, c, full, true)
		if err != nil {
			if ctx.Err() != nil || engine.Of(c).Check() != nil {
				return
			}
			c.Logger().Warn("zkrecipes: election observer: read failed", "path", full, "err", err)
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case _, ok := <-states:
				t.Stop()
				if !ok {
					return
				}
			case <-t.C:
			}
			continue
		}
		if first || l != last {
			post(l)
			first, last = false, l
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return
			case ev := <-watch:
				waiting = false
				_ = ev // any event: read again
			case s, ok := <-states:
				if !ok {
					return
				}
				if s.IsConnected() {
					waiting = false // watches may have been missed: read again
				}
			}
		}
	}
}
