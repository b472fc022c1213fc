package engine

// A Follower's round: the reads due at once, run one after the other on
// Run's goroutine, or, under Pipeline, many in flight together.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Pipeline lets up to n of the follower's due reads run at once (n ≤ 1,
// the default: one after the other, on Run's goroutine), their requests
// in flight together on the session as a load's are: the thousand reads
// of a thousand nodes, all due again after a reconnection or a new
// session, then cost about 1000/n round trips instead of a thousand.
// Each read of a round runs on a goroutine of the round's, beside the
// others, so reads that share state must guard it; a read never runs
// twice at once, and Run's goroutine takes nothing from its queue (a
// watch fired, a state, a read added or removed) until every read of the
// round has returned. Call it before Run.
func (f *Follower) Pipeline(n int) { f.inFlight = n }

// runDirty runs every due read, in the order they became due (Pipeline's
// many at once); reads made due meanwhile (by a read that adds one) wait
// for the next round.
func (f *Follower) runDirty(ctx context.Context) error {
	var due []*followRead
	for _, rd := range f.dirty {
		rd.dirty = false
		if rd.removed || !rd.at.IsZero() {
			continue // gone, or pausing after a failure (in f.waiting)
		}
		rd.w.again = 0
		due = append(due, rd)
	}
	f.dirty = nil
	errs := f.round(ctx, due)
	for i, rd := range due {
		if stop, err := f.ran(ctx, rd, errs[i]); stop {
			f.requeue(due[i+1:])
			return err
		}
	}
	return nil
}

// round runs due, Pipeline's many at a time, and returns their errors in
// due's order; once ctx ends, the reads not yet begun are not run (their
// errors are nil).
func (f *Follower) round(ctx context.Context, due []*followRead) []error {
	errs := make([]error, len(due))
	n := min(f.inFlight, len(due))
	if n <= 1 {
		for i, rd := range due {
			if errs[i] = rd.read(ctx, &rd.w); ctx.Err() != nil {
				break
			}
		}
		return errs
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(due) && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				errs[i] = due[i].read(ctx, &due[i].w)
			}
		}()
	}
	wg.Wait()
	return errs
}

// ran books what one read of a round came to: its backoff, its watches,
// its pause. It stops the round when ctx has ended (nil) or the client
// closed (its error).
func (f *Follower) ran(ctx context.Context, rd *followRead, err error) (stop bool, _ error) {
	switch {
	case ctx.Err() != nil:
		return true, nil
	case err == nil:
		rd.w.fired = nil
		rd.retry.Reset()
		if len(rd.w.armed) > 0 {
			f.watched = true
		}
		if !rd.ok && !rd.removed {
			rd.ok = true
			f.pending--
		}
		if rd.w.again > 0 && !rd.removed {
			rd.at = time.Now().Add(rd.w.again)
			f.waiting = append(f.waiting, rd)
		}
	case errors.Is(err, zkerr.ErrClosed):
		return true, err
	case zkerr.IsRefused(err):
		// Not on a timer: the next reconnection or session reads it
		// again (f.all, f.newSession).
		f.c.log.Error("zkrecipes: reading refused; reading again when the connection changes", "what", f.what, "key", rd.key, "err", zkerr.Explain(err))
	default:
		f.c.log.Warn("zkrecipes: reading failed; trying again", "what", f.what, "key", rd.key, "err", err)
		rd.at = time.Now().Add(rd.retry.Pace())
		f.waiting = append(f.waiting, rd)
	}
	return false, nil
}

func (f *Follower) requeue(rds []*followRead) {
	for _, rd := range rds {
		rd.dirty = false
		f.mark(rd)
	}
}
