package election

import (
	"context"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Observe follows the election at path (a latch's or a selector's)
// without taking part, as etcd's Election.Observe does: the returned
// channel receives the leader first, then every change, in order, as a
// recipes.Participant with IsLeader set (the zero recipes.Participant, with an empty Node,
// when nobody leads). It watches only the
// leader's node (a participant joining behind it wakes nobody), and reads
// again after each reconnection. The channel is closed when ctx ends or
// the client closes. Changes queue without bound while the reader is
// slow, so the observer never holds anything up.
func Observe(ctx context.Context, c *recipes.Client, path string) (<-chan recipes.Participant, error) {
	full, err := recipeargs.ReadPath(ctx, c, path)
	if err != nil {
		return nil, err
	}
	var out notify.Listeners[recipes.Participant]
	ch, _ := out.Subscribe()
	go func() {
		defer out.Close()
		observe(ctx, c, full, out.Post)
	}()
	return ch, nil
}

// observe follows the leader until ctx ends or the client closes.
func observe(ctx context.Context, c *recipes.Client, full string, post func(recipes.Participant)) {
	var (
		last  recipes.Participant
		first = true
	)
	f := (*engine.Client)(c).NewFollower("election "+full, nil)
	f.Add("election "+full, func(ctx context.Context, w *engine.Watches) error {
		l, err := readLeader(ctx, c, full, w)
		if err != nil {
			return err
		}
		if first || l != last {
			post(l)
			first, last = false, l
		}
		return nil
	})
	_ = f.Run(ctx)
}
