package main

// The floor of a cache's load (issue 34): the same tree's nodes read with
// nothing but reads, their paths known beforehand (no getChildren, no
// level-by-level discovery, no cache to fill): 64 getData per multiRead,
// 64 multiReads in flight (what the cache's load keeps in flight), on the
// same client and link as our cache. A load cannot be faster than this;
// the cache's load time is reported against it.

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/par"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// rawFloor reads paths (data and stat) in pipelined multiReads and
// returns the wall time and the requests made.
func rawFloor(ctx context.Context, c *recipes.Client, paths []string) (time.Duration, int, error) {
	e := (*engine.Client)(c)
	var batches [][]engine.ReadOp
	for i := 0; i < len(paths); i += 64 {
		var ops []engine.ReadOp
		for _, p := range paths[i:min(i+64, len(paths))] {
			ops = append(ops, engine.ReadOp{Path: p})
		}
		batches = append(batches, ops)
	}
	t0 := time.Now()
	err := par.Each(64, batches, func(ops []engine.ReadOp) error {
		res, err, ok := e.MultiRead(ctx, ops)
		if !ok {
			return fmt.Errorf("the floor: a multiRead could not be sent (no Wire)")
		}
		if err != nil {
			return err
		}
		for i, r := range res {
			if r.Err != nil {
				return fmt.Errorf("the floor: %s: %w", ops[i].Path, r.Err)
			}
		}
		return nil
	})
	return time.Since(t0), len(batches), err
}
