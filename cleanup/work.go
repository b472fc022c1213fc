package cleanup

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// run is the reaper's loop: while it leads (or always, without an
// election) it follows the tracked parents' children and checks every
// candidate once an interval, until Close.
func (r *Reaper) run(ctx context.Context) {
	defer r.followers.Wait()
	t := time.NewTicker(r.interval)
	defer t.Stop()
	following := false
	for {
		if r.latch == nil || r.latch.HasLeadership() {
			if !following {
				following = true
				r.followAll(ctx)
			}
			r.checkAll(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// followAll starts following the children of every parent, all on one
// Follower (one goroutine however many parents): from then on (until
// Close) the candidates under them are tracked as they come.
func (r *Reaper) followAll(ctx context.Context) {
	f := (*engine.Client)(r.c).NewFollower("reaper", nil)
	r.mu.Lock()
	r.follower = f
	for p, pp := range r.parents {
		r.followLocked(ctx, p, pp)
	}
	r.mu.Unlock()
	r.followers.Add(1)
	go func() {
		defer r.followers.Done()
		_ = f.Run(ctx)
	}()
}

// followLocked follows pp's children on the reaper's Follower until ctx
// ends or pp is forgotten (dropParentLocked); r.mu is held.
func (r *Reaper) followLocked(ctx context.Context, p string, pp *parent) {
	if r.follower == nil || pp.followed {
		return
	}
	pp.followed = true
	r.follower.Add(p, func(_ context.Context, w *engine.Watches) error {
		return r.list(ctx, p, pp, w)
	})
}

// list reads p's children into the candidates, with the engine's watched
// read: a children watch (none when one is still armed: they have not
// changed, and the list is not read at all). A parent given that is
// missing is watched, with an exists watch, until it is created; a parent
// found below it that is gone is forgotten (no watch is left on it).
//
// A parent is listed at most once an interval: new candidates wait for
// the next check anyway, and a busy parent (one whose children the
// reaper itself is deleting, thousands of them) would otherwise be listed
// again after every delete. Too early, list asks the Follower to run it
// again when the interval is over (the Follower's goroutine is every
// parent's: it never waits on it). ctx is the reaper's.
func (r *Reaper) list(ctx context.Context, p string, pp *parent, w *engine.Watches) error {
	if w.Armed(engine.WatchChildren, p) {
		return nil
	}
	if wait := time.Until(pp.listed.Add(r.interval)); wait > 0 {
		w.RunAfter(wait)
		return nil
	}
	pp.listed = time.Now()
	v, err := (*engine.Client)(r.c).ReadChildren(ctx, p, w, pp.depth == 0)
	switch {
	case err != nil:
		return err
	case v.Exists:
		r.found(ctx, p, pp, v.Children)
	case pp.depth > 0:
		r.mu.Lock()
		if r.parents[p] == pp {
			r.dropParentLocked(p)
		}
		r.mu.Unlock()
	}
	return nil
}

// found tracks kids, the children of p (unless p was forgotten
// meanwhile), and follows those that are parents in turn.
func (r *Reaper) found(ctx context.Context, p string, pp *parent, kids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parents[p] != pp {
		return
	}
	for _, k := range kids {
		cp := zkpath.JoinPath(p, k)
		if r.nodes[cp] == nil {
			r.nodes[cp] = &entry{depth: pp.depth + 1}
		}
		if pp.depth+1 < r.opts.depth && r.parents[cp] == nil {
			np := &parent{depth: pp.depth + 1}
			r.parents[cp] = np
			r.followLocked(ctx, cp, np)
		}
	}
}

// dropParentLocked stops following p's children; r.mu is held.
func (r *Reaper) dropParentLocked(p string) {
	if pp := r.parents[p]; pp != nil && pp.followed {
		r.follower.Remove(p)
	}
	delete(r.parents, p)
}

// checkAll checks every candidate, up to checkers at a time.
func (r *Reaper) checkAll(ctx context.Context) {
	r.mu.Lock()
	paths := make([]string, 0, len(r.nodes))
	for p := range r.nodes {
		paths = append(paths, p)
	}
	r.mu.Unlock()
	const checkers = 16
	sem := make(chan struct{}, checkers)
	var wg sync.WaitGroup
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(p string) {
			defer wg.Done()
			defer func() { <-sem }()
			r.check(ctx, p)
		}(p)
	}
	wg.Wait()
}

// check looks at one candidate and deletes it once it has been seen empty
// and unchanged on enough consecutive checks.
func (r *Reaper) check(ctx context.Context, p string) {
	ok, st, err := (*engine.Client)(r.c).Exists(ctx, p)
	r.checked.Add(1)
	if err != nil {
		return // tried again at the next round
	}
	r.mu.Lock()
	e := r.nodes[p]
	if e == nil {
		r.mu.Unlock()
		return
	}
	if !ok {
		r.forgetLocked(p, e, false)
		r.mu.Unlock()
		return
	}
	if st.NumChildren > 0 || !isPersistent(st) {
		e.empties = 0 // busy, or not ours to delete (ephemeral, container, TTL)
		r.mu.Unlock()
		return
	}
	if e.empties > 0 && (st.Cversion != e.cversion || st.Czxid != e.czxid) {
		e.empties = 0 // children came and went since the last check: in use
		r.active.Add(1)
	}
	e.empties++
	e.cversion, e.czxid = st.Cversion, st.Czxid
	due := e.empties >= r.opts.checks
	r.mu.Unlock()
	if !due || r.latch != nil && !r.latch.HasLeadership() {
		return
	}
	if !r.pace(ctx) {
		return
	}
	// The server refuses to delete a node that has children, and the
	// version makes it refuse a node deleted and made again meanwhile.
	err = (*engine.Client)(r.c).Delete(ctx, p, st.Version)
	switch {
	case err == nil:
		r.reaped.Add(1)
		r.log.Debug("zkrecipes: reaper: deleted an empty node", "path", p)
		r.mu.Lock()
		if e := r.nodes[p]; e != nil {
			r.forgetLocked(p, e, true)
		}
		r.mu.Unlock()
	case errors.Is(err, zk.ErrNotEmpty):
		r.notEmpty.Add(1)
		r.mu.Lock()
		e.empties = 0
		r.mu.Unlock()
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
		r.mu.Lock()
		e.empties = 0
		r.mu.Unlock()
	default:
		r.log.Warn("zkrecipes: reaper: delete failed", "path", p, "err", err)
	}
}

// forgetLocked drops a candidate that is gone (deleted by us when
// byUs), as its mode says; r.mu is held.
func (r *Reaper) forgetLocked(p string, e *entry, byUs bool) {
	e.empties = 0
	if e.explicit {
		switch r.opts.mode {
		case ReapForever:
			return
		case ReapUntilDelete:
			if !byUs {
				return
			}
		}
	}
	delete(r.nodes, p)
	r.dropParentLocked(p)
}

// pace waits for the rate limit; false when ctx ended.
func (r *Reaper) pace(ctx context.Context) bool {
	if r.opts.rate == 0 {
		return true
	}
	r.mu.Lock()
	now := time.Now()
	at := r.next
	if at.Before(now) {
		at = now
	}
	r.next = at.Add(time.Second / time.Duration(r.opts.rate))
	r.mu.Unlock()
	return sleep(ctx, time.Until(at))
}

// sleep waits for d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
