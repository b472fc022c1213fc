package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Acquire waits until the driver says our node holds, and returns the
// signals of the hold.
// With wait false it makes one check and, if that does not hold, leaves.
// On every outcome other than holding, our node is removed: held is false
// and err says why (wrapping ctx.Err() when ctx ended, ErrSessionLost when
// the session ended, ErrNotConnected when wait is false and the client is
// not connected, ErrClosed when the client closed).
func (ct *Contest) Acquire(ctx context.Context, wait bool) (held bool, sig Signals, err error) {
	if ct == nil || ct.c == nil {
		return false, Signals{}, fmt.Errorf("%w: Contest not made by Enter", zkerr.ErrInvalidArgument)
	}
	if ctx == nil {
		_ = ct.Leave(context.Background())
		return false, Signals{}, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	held, sig, err = ct.acquire(ctx, wait)
	ct.met.acquired(held, err)
	if !held {
		if lerr := ct.Leave(context.WithoutCancel(ctx)); lerr != nil && err == nil {
			err = lerr
		}
	}
	return held, sig, err
}

// queueView is what a waiter knows of its queue between two looks.
type queueView struct {
	below  []contend.Contender // contenders ahead of ours that may still exist
	listed bool                // below comes from a listing of this contest
	czxid  int64               // the parent's, as of the last listing
	target string              // name of the contender we watch
	watch  <-chan zk.Event
}

// acquire waits, through Await, in three steps per look: list the queue
// (once, or again when the snapshot can no longer be trusted), decide
// with the driver, and either hold or watch the one contender the driver
// names.
func (ct *Contest) acquire(ctx context.Context, wait bool) (bool, Signals, error) {
	var (
		q   queueView
		sig Signals
	)
	held, err := ct.c.Await(ctx, Wait{What: ct.path, Session: ct.sid, Once: !wait}, func(snap Snapshot, wk Wake) (Look, error) {
		if wk.Event != nil {
			ct.woke(&q, *wk.Event)
		}
		if ct.granted {
			return ct.grant(ctx, snap, &q, &sig)
		}
		if !q.listed {
			if err := ct.list(ctx, &q); err != nil {
				return Look{}, err
			}
		}
		if ct.know != nil && len(q.below) > 0 && ct.prune(&q.below) {
			q.listed = false // a contender known gone may have left an unlisted one
			return Look{Again: true}, nil
		}
		v := ct.driver.Decide(q.below)
		switch {
		case v.Held:
			return ct.grant(ctx, snap, &q, &sig)
		case !wait:
			return Look{}, nil
		}
		return ct.watchAhead(ctx, &q, v.Watch)
	})
	if err != nil || !held {
		return false, Signals{}, err
	}
	return true, sig, nil
}

// list reads the queue: the contenders ahead of ours, in order.
func (ct *Contest) list(ctx context.Context, q *queueView) error {
	kids, pstat, err := ct.c.Children(ctx, ct.parent)
	if errors.Is(err, zk.ErrNoNode) {
		return ct.nodeGone()
	}
	if err != nil {
		return fmt.Errorf("zkrecipes: waiting for %s: %w", ct.path, err)
	}
	kids = ct.dropGhosts(kids)
	var sorted []contend.Contender
	ours := -1
	if len(kids) == 1 && kids[0] == ct.me.Name {
		ours = 0 // alone, the uncontended case: nothing to sort
	} else {
		sorted = contend.SortContenders(kids, ct.driver)
		for i, k := range sorted {
			if k.Name == ct.me.Name {
				ours = i
				break
			}
		}
	}
	if ours < 0 {
		return ct.nodeGone()
	}
	q.below, q.listed, q.czxid = sorted[:ours:ours], true, pstat.Czxid
	ct.met.queue(ours)
	q.target, q.watch = "", nil
	if ct.know == nil && len(q.below) > 0 {
		ct.know = ct.c.knowledge.enter(ct.parent, q.czxid)
	}
	return nil
}

// grant finishes a look whose answer is "held": it confirms our session
// owns the node when asked to (EnterVerifyOwner), and takes the hold's
// signals from the snapshot the look was made in, unless the connection
// blinked meanwhile (then it looks again).
func (ct *Contest) grant(ctx context.Context, snap Snapshot, q *queueView, sig *Signals) (Look, error) {
	if ct.verifyOwner {
		if err := ct.confirmOwner(ctx, snap); err != nil {
			return Look{}, err
		}
	}
	hold := ct.c.HoldSignal(snap)
	if notify.IsClosed(hold) || notify.IsClosed(snap.Changed) {
		return Look{Again: true}, nil
	}
	if len(q.below) == 0 && !ct.granted {
		if ct.know == nil {
			// Held at the first look, nobody ahead: the record is worth
			// joining only when another contest of this Client already
			// uses it (the watermark can then spare it a list).
			ct.know = ct.c.knowledge.enterIfPresent(ct.parent, q.czxid)
		}
		if ct.know != nil {
			ct.know.allGoneBelow(ct.me.Key)
		}
	}
	*sig = Signals{Done: hold, Lost: snap.Lost}
	return Look{Done: true}, nil
}

// watchAhead leaves a watch on the contender at index w of q.below (or
// keeps the one already there). When that contender is already gone it
// looks again at once, after a new list if more contenders of unknown fate
// block ours.
func (ct *Contest) watchAhead(ctx context.Context, q *queueView, w int) (Look, error) {
	if ct.know == nil { // about to wait: record what goes
		ct.know = ct.c.knowledge.enter(ct.parent, q.czxid)
	}
	next := q.below[w]
	if next.Name == q.target && q.watch != nil {
		return Look{Watch: q.watch}, nil
	}
	_, _, ch, err := ct.c.GetW(ctx, zkpath.JoinPath(ct.parent, next.Name))
	switch {
	case err == nil:
		q.target, q.watch = next.Name, ch
		return Look{Watch: ch}, nil
	case errors.Is(err, zk.ErrNoNode):
		ct.know.gone(next)
		if ct.driver.RelistAfter(next) || ct.unknownBlocking(q.below[:w]) > 0 {
			q.listed = false // more of unknown fate ahead: list again
		}
		return Look{Again: true}, nil
	}
	return Look{}, fmt.Errorf("zkrecipes: waiting for %s: %w", ct.path, err)
}

// woke applies the event of the watch on q.target.
func (ct *Contest) woke(q *queueView, ev zk.Event) {
	target := q.target
	q.target, q.watch = "", nil
	if ev.Type != zk.EventNodeDeleted {
		return // the session ended or the client is closing: the next look decides
	}
	i := indexOf(q.below, target)
	if i < 0 {
		return
	}
	gone := q.below[i]
	ct.know.gone(gone)
	if ct.driver.RelistAfter(gone) || ct.unknownBlocking(q.below[:i]) > 1 {
		// Several blocking contenders ahead of the one that went may
		// still exist: one list is cheaper than probing each.
		q.listed = false
	}
}
