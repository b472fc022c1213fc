package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/par"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// The cache scenario's sessions and Curator process (cacheSides), and its
// trees (cacheTree), made and removed in multis: cache.go and scale.go
// use them.

// cacheSides are what the cache scenario's rounds use: a session to make
// the tree and set it, our cache's session and Curator's (a proxy each),
// and Curator's process (nil, with curNote saying why, when it is not
// run).
type cacheSides struct {
	admin, oc     *recipes.Client
	pxOurs, pxCur *zktest.Proxy
	cur           *peerProc
	curNote       string
	cleanups      []func()
}

func (cs *cacheSides) close() {
	for i := len(cs.cleanups) - 1; i >= 0; i-- {
		cs.cleanups[i]()
	}
}

// startCacheSides connects the cache scenario's sessions and starts its
// Curator process (with jvmArgs after the harness's own; a later -Xmx
// wins). Close it also after an error.
func (b *bench) startCacheSides(ctx context.Context, jvmArgs []string) (*cacheSides, error) {
	cs := &cacheSides{}
	var err error
	if cs.admin, err = recipes.Connect(ctx, b.servers, recipes.WithSessionTimeout(b.f.sessionTimeout)); err != nil {
		return cs, err
	}
	cs.cleanups = append(cs.cleanups, func() { cs.admin.Close(context.Background()) })
	for _, px := range []**zktest.Proxy{&cs.pxOurs, &cs.pxCur} {
		if *px, err = zktest.ListenProxy(b.servers[0]); err != nil {
			return cs, err
		}
		p := *px
		cs.cleanups = append(cs.cleanups, func() { p.Close() })
	}
	if cs.oc, err = recipes.Connect(ctx, []string{cs.pxOurs.Addr()}, recipes.WithSessionTimeout(b.f.sessionTimeout)); err != nil {
		return cs, err
	}
	cs.cleanups = append(cs.cleanups, func() { cs.oc.Close(context.Background()) })
	if !peersOn {
		cs.curNote = "not run: -peers=false"
		fmt.Println("   Curator:", cs.curNote)
		return cs, nil
	}
	return cs, cs.startCurator(b, jvmArgs)
}

// startCurator starts the Curator side's process (after an earlier one
// died, too).
func (cs *cacheSides) startCurator(b *bench, jvmArgs []string) error {
	dir, err := os.MkdirTemp("", "zkrecipes-bench-cache-")
	if err != nil {
		return err
	}
	cs.cleanups = append(cs.cleanups, func() { os.RemoveAll(dir) })
	p, version, err := startCuratorJVM(dir, []string{cs.pxCur.Addr()}, b.f.sessionTimeout, 1, jvmArgs)
	switch {
	case errors.Is(err, interop.ErrUnavailable):
		cs.curNote = "not run: " + err.Error()
		fmt.Println("   Curator:", cs.curNote)
		return nil
	case err != nil:
		return err
	}
	cs.cleanups = append(cs.cleanups, p.close)
	if err := p.ready(); err != nil {
		return err
	}
	cs.cur = p
	fmt.Printf("   Curator: %s, CuratorCache %s\n", version, strings.Join(jvmArgs, " "))
	return nil
}

// cacheTree is a tree of the cache scenario: leaves under fan-out 100
// (parents of 100 leaves under one root), 100-byte values.
type cacheTree struct {
	root          string
	level, leaves []string
	total         int
}

// cacheBatch is the creates or deletes per multi when a tree is made or
// removed (about 150 KB of a 1 MB request), cacheBatchesInFlight the
// multis in flight.
const (
	cacheBatch           = 1000
	cacheBatchesInFlight = 8
)

// makeCacheTree makes the tree of n leaves, in multis of cacheBatch
// creates, cacheBatchesInFlight at once, parents first.
func (b *bench) makeCacheTree(ctx context.Context, admin *recipes.Client, n int) (*cacheTree, error) {
	t := &cacheTree{root: fmt.Sprintf("%s/cache%d", b.root, n)}
	parents := (n + 99) / 100
	t.total = 1 + parents + n
	t0 := time.Now()
	if _, err := admin.CreateWithParents(ctx, t.root, cacheValue("root"), 0); err != nil {
		return nil, err
	}
	for i := range parents {
		t.level = append(t.level, fmt.Sprintf("%s/p%03d", t.root, i))
	}
	for i := range n {
		t.leaves = append(t.leaves, fmt.Sprintf("%s/p%03d/n%03d", t.root, i/100, i%100))
	}
	for _, ps := range [][]string{t.level, t.leaves} {
		if err := inBatches(ps, func(batch []string) error {
			ops := make([]recipes.Op, len(batch))
			for i, p := range batch {
				ops[i] = recipes.CreateOp(p, cacheValue("init"), 0)
			}
			_, err := admin.Multi(ctx, ops...)
			return err
		}); err != nil {
			return nil, fmt.Errorf("making the tree of %d leaves: %w", n, err)
		}
	}
	fmt.Printf("-- a cache of %d nodes (%d leaves under fan-out 100, 100-byte values), made in %s\n", t.total, n, ms(time.Since(t0)))
	return t, nil
}

// remove deletes the tree (leaves, then parents, then the root); errors
// are ignored.
func (t *cacheTree) remove(ctx context.Context, admin *recipes.Client) {
	for _, ps := range [][]string{t.leaves, t.level, {t.root}} {
		_ = inBatches(ps, func(batch []string) error {
			ops := make([]recipes.Op, len(batch))
			for i, p := range batch {
				ops[i] = recipes.DeleteOp(p, -1)
			}
			_, err := admin.Multi(ctx, ops...)
			return err
		})
	}
}

// inBatches calls fn with ps in batches of cacheBatch, cacheBatchesInFlight
// at once.
func inBatches(ps []string, fn func([]string) error) error {
	var batches [][]string
	for len(ps) > 0 {
		k := min(len(ps), cacheBatch)
		batches, ps = append(batches, ps[:k]), ps[k:]
	}
	return par.Each(cacheBatchesInFlight, batches, fn)
}
