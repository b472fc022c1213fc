package queue

// The consumer: the loop that takes the queue's items in order, in normal
// mode (delete, then consume) or lock-safety mode (lock, consume, then
// delete and unlock in one transaction).

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkop"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// run consumes until ctx ends or the client closes.
func (q *core) run(ctx context.Context) {
	skip := skips{locked: map[string]bool{}, kept: map[string]bool{}}
	for {
		snap := q.e.Snapshot()
		names, err := q.next(ctx, skip)
		switch {
		case ctx.Err() != nil, errors.Is(err, recipes.ErrClosed):
			return
		case zkerr.IsRefused(err):
			// Not on a timer: the refusal lasts until the ACL or the
			// credentials change; list again at the next state change.
			q.log.Error("zkrecipes: the queue may not be listed; listing it again when the connection changes", "queue", q.path, "err", zkerr.Explain(err))
			select {
			case <-snap.Changed:
			case <-ctx.Done():
				return
			}
			continue
		case err != nil:
			q.log.Warn("zkrecipes: listing the queue failed; trying again", "queue", q.path, "err", err)
			t := time.NewTimer(time.Second)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		for _, name := range names {
			if ctx.Err() != nil {
				return
			}
			if q.kind == kindDelay && dueOf(name) > time.Now().UnixMilli() {
				break
			}
			switch q.process(ctx, name) {
			case lockedAway:
				skip.locked[name] = true
				continue
			case kept:
				skip.kept[name] = true
				continue
			}
			if q.kind == kindPriority || q.kind == kindDelay {
				break // list again: a more urgent item may have come
			}
		}
	}
}

// skips are the items a consumer passes over: locked by another consumer
// (taken again once the lock goes) and unreadable ones kept in the queue
// (passed over while they are there).
type skips struct{ locked, kept map[string]bool }

// next waits until the queue has an item due that no other consumer has
// locked and that was not kept as unreadable, and returns those items in
// the order they are taken. It lists
// the directory again on every change of its children, every
// reconnection and every new session (so nothing put while the consumer
// was away is missed: CURATOR-623), in a delay queue when the first item
// falls due, and when the lock of an item in locked goes (locked forgets
// it then, and forgets the items that are gone).
func (q *core) next(ctx context.Context, skip skips) ([]string, error) {
	locked := skip.locked
	var got []string
	_, err := q.e.Await(ctx, engine.Wait{What: q.path}, func(engine.Snapshot, engine.Wake) (engine.Look, error) {
		kids, exists, ch, err := q.e.ChildrenOrCreation(ctx, q.full)
		if err != nil || !exists {
			return engine.Look{Watch: ch}, err
		}
		all := sortItems(kids, ItemPrefix, q.kind)
		if err := q.forgetUnlocked(ctx, skip, all); err != nil {
			return engine.Look{}, err
		}
		items := make([]string, 0, len(all))
		for _, n := range all {
			if !locked[n] && !skip.kept[n] {
				items = append(items, n)
			}
		}
		look := engine.Look{Watch: ch}
		switch {
		case len(items) == 0 && len(locked) > 0:
			// Only locked items: wait for a lock to go as well.
			return q.watchALock(ctx, locked, look)
		case len(items) == 0:
			return look, nil
		case q.kind == kindDelay && dueOf(items[0]) > time.Now().UnixMilli():
			look.At = time.UnixMilli(dueOf(items[0]))
			return look, nil
		}
		got = items
		return engine.Look{Done: true}, nil
	})
	return got, err
}

// forgetUnlocked takes out of skip the items gone (not in all) and, out
// of skip.locked, those whose lock went (to take them again).
func (q *core) forgetUnlocked(ctx context.Context, skip skips, all []string) error {
	present := make(map[string]bool, len(all))
	for _, n := range all {
		present[n] = true
	}
	for n := range skip.kept {
		if !present[n] {
			delete(skip.kept, n)
		}
	}
	locked := skip.locked
	for n := range locked {
		if !present[n] {
			delete(locked, n) // consumed
			continue
		}
		ok, _, err := q.e.Exists(ctx, zkpath.JoinPath(q.lockFull, n))
		if err != nil {
			return err
		}
		if !ok {
			delete(locked, n) // its lock went: take it again
		}
	}
	return nil
}

// watchALock adds to look a watch on the lock of one of the locked
// items, or asks for another look when that lock is gone already.
func (q *core) watchALock(ctx context.Context, locked map[string]bool, look engine.Look) (engine.Look, error) {
	for n := range locked {
		ok, _, ech, err := q.e.ExistsW(ctx, zkpath.JoinPath(q.lockFull, n))
		if err != nil {
			return engine.Look{}, err
		}
		if !ok {
			delete(locked, n)
			return engine.Look{Again: true}, nil
		}
		look.Other = ech
		break
	}
	return look, nil
}

// process consumes one item.
func (q *core) process(ctx context.Context, name string) outcome {
	if q.lockFull == "" {
		return q.processNormally(ctx, name)
	}
	return q.processWithLock(ctx, name)
}

// processNormally is Curator's normal mode: read, delete, consume (at
// most once); an item that does not decode is not deleted unless it is
// handed over (unreadableNormally).
func (q *core) processNormally(ctx context.Context, name string) outcome {
	node := zkpath.JoinPath(q.full, name)
	var (
		data []byte
		st   *zk.Stat
	)
	err := q.e.Retry(ctx, func() error {
		var err error
		data, st, err = q.e.Get(ctx, node)
		return err
	})
	if err != nil {
		if !errors.Is(err, zk.ErrNoNode) && ctx.Err() == nil {
			q.log.Warn("zkrecipes: reading a queue item failed", "queue", q.path, "item", name, "err", err)
		}
		return finished
	}
	items, err := Decode(data)
	if err != nil {
		return q.unreadableNormally(ctx, name, data, st.Version, err)
	}
	if !q.deleteItem(ctx, name, st.Version) {
		return finished // another consumer has it
	}
	m := q.message(name, items)
	m.acked = true // nothing left to delete
	if err := q.opts.consumer.Consume(ctx, m); err != nil {
		q.log.Warn("zkrecipes: the consumer failed; in normal mode the item is gone", "queue", q.path, "item", name, "err", err)
	}
	return finished
}

// deleteItem deletes the item name at version (normal mode's take);
// false when it failed or another consumer took it first.
func (q *core) deleteItem(ctx context.Context, name string, version int32) bool {
	err := q.e.Retry(ctx, func() error { return q.e.Delete(ctx, zkpath.JoinPath(q.full, name), version) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) && ctx.Err() == nil {
		q.log.Warn("zkrecipes: deleting a queue item failed", "queue", q.path, "item", name, "err", err)
	}
	return err == nil
}

func (q *core) message(name string, items [][]byte) *Message {
	m := &Message{Items: items, Node: q.e.Namespace().Strip(zkpath.JoinPath(q.full, name)), name: name, q: q}
	if q.kind == kindID {
		if id, _, ok := parseID(name); ok {
			m.ID = id
		}
	}
	return m
}

// lock is a consumer's lock on one item in lock-safety mode: the
// Curator-compatible ephemeral lockPath/<item> and, made in the same
// transaction, the ephemeral marker lockPath/_c_<uuid>-<item>, whose name
// no other consumer can take: it exists exactly as long as this lock
// (the lock node's name can be taken again by another consumer once the
// session that owned it is gone, so a check on it proves nothing).
type lock struct {
	node, marker string
	sid          int64
	hold         *engine.Hold
}

// errTaken means another consumer holds the item's lock; errItemGone that
// the item was deleted by someone else while we held its lock.
var (
	errTaken    = errors.New("taken")
	errItemGone = errors.New("item gone")
)

// takeLock creates the item's lock, or returns errTaken.
func (q *core) takeLock(ctx context.Context, name string) (*lock, error) {
	l := &lock{
		node:   zkpath.JoinPath(q.lockFull, name),
		marker: zkpath.JoinPath(q.lockFull, "_c_"+zkpath.NewUUID()+"-"+name),
	}
	lostReply := false
	err := q.e.Retry(ctx, func() error {
		if err := q.e.WaitConnected(ctx); err != nil {
			return err
		}
		snap := q.e.Snapshot()
		if lostReply {
			// The last try may have been applied: the marker says.
			ok, st, err := q.e.Exists(ctx, l.marker)
			if err != nil {
				return err
			}
			if ok {
				if st.EphemeralOwner != snap.SessionID {
					q.release(l) // made in a session gone since
					return errTaken
				}
				l.sid = snap.SessionID
				l.hold = engine.NewHold(q.e, l.marker, engine.Signals{Done: q.e.HoldSignal(snap), Lost: snap.Lost}).Named(q.what())
				return nil
			}
		}
		res, err := q.e.Multi(ctx,
			zkop.Create(l.node, []byte(recipeargs.LocalIP()), zk.FlagEphemeral),
			zkop.Create(l.marker, nil, zk.FlagEphemeral))
		switch {
		case err == nil:
			if q.e.SessionID() != snap.SessionID {
				lostReply = true // made in the session we have now: look
				return zk.ErrConnectionClosed
			}
			l.sid = snap.SessionID
			l.hold = engine.NewHold(q.e, l.marker, engine.Signals{Done: q.e.HoldSignal(snap), Lost: snap.Lost}).Named(q.what())
			return nil
		case zkerr.IsRetryable(err):
			lostReply = true
			return err
		case len(res) > 0 && errors.Is(res[0].Error, zk.ErrNodeExists):
			return errTaken
		case errors.Is(err, zk.ErrNoNode): // the lock directory went
			if err := q.ensureDir(ctx, q.lockFull); err != nil {
				return err
			}
			return zk.ErrConnectionClosed // try again (retryable)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// release deletes the lock without touching the item, in one transaction
// that needs the marker: a lock whose session is gone is left alone (its
// name may be another consumer's lock by now).
func (q *core) release(l *lock) {
	ctx, cancel := context.WithTimeout(context.Background(), q.e.SessionTimeout()+time.Second)
	defer cancel()
	err := q.e.Retry(ctx, func() error {
		_, err := q.e.Multi(ctx, zkop.Delete(l.marker, -1), zkop.Delete(l.node, -1))
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		q.log.Warn("zkrecipes: releasing a queue item's lock failed; it goes with the session", "queue", q.path, "lock", q.e.Namespace().Strip(l.node), "err", err)
	}
	if l.hold != nil {
		l.hold.MarkReleased()
	}
}

// processWithLock is lock-safety mode: lock, read, consume, then delete
// (or requeue) in a fenced transaction.
func (q *core) processWithLock(ctx context.Context, name string) outcome {
	l, err := q.takeLock(ctx, name)
	if errors.Is(err, errTaken) {
		return lockedAway
	}
	if err != nil {
		if ctx.Err() == nil {
			q.log.Warn("zkrecipes: locking a queue item failed", "queue", q.path, "item", name, "err", err)
		}
		return finished
	}
	node := zkpath.JoinPath(q.full, name)
	var data []byte
	err = q.e.Retry(ctx, func() error {
		var err error
		data, _, err = q.e.Get(ctx, node)
		return err
	})
	if err != nil {
		if !errors.Is(err, zk.ErrNoNode) && ctx.Err() == nil {
			q.log.Warn("zkrecipes: reading a queue item failed", "queue", q.path, "item", name, "err", err)
		}
		q.release(l)
		return finished
	}
	items, err := Decode(data)
	if err != nil {
		return q.unreadableWithLock(ctx, name, l, data, err)
	}
	m := q.message(name, items)
	m.lock, m.data = l, data
	cerr := q.opts.consumer.Consume(ctx, m)
	requeue := cerr != nil && q.opts.errorMode == ErrorRequeue
	ferr := m.finish(ctx, requeue)
	if cerr != nil { // what happened to the item, not what was meant to
		q.log.Warn("zkrecipes: the consumer failed", "queue", q.path, "item", name, "requeued", requeue && ferr == nil, "err", cerr)
	}
	if ferr != nil && !errors.Is(ferr, errItemGone) && !m.told() {
		q.log.Error("zkrecipes: the item's lock was lost while it was consumed; it may be delivered again", "queue", q.path, "item", name, "err", ferr)
	}
	return finished
}

// fencedFinish is the one transaction that ends a lock-safety hold: the
// marker deleted (which fails once the lock's session is gone), the item
// deleted or put back under its own name, the lock node deleted.
func (q *core) fencedFinish(ctx context.Context, m *Message, requeue bool) error {
	l := m.lock
	// Finish even when the consumer's ctx (the queue's) ended: the work is
	// done, and the lock would otherwise hold the item until the session
	// ends.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.e.SessionTimeout()+time.Second)
	defer cancel()
	node := zkpath.JoinPath(q.full, m.name)
	ops := []zkop.Op{zkop.Delete(l.marker, -1), zkop.Delete(node, -1)}
	if requeue {
		ops = append(ops, zkop.Create(zkpath.JoinPath(q.full, requeueName(m.name)), m.data, zk.FlagSequence))
	}
	ops = append(ops, zkop.Delete(l.node, -1))
	verb := "ack"
	if requeue {
		verb = "requeue"
	}
	lost := func() error {
		return zkerr.Namedf(q.what(), "%s %s: %w: the item's lock went with its session, so the item may be delivered to another consumer", verb, m.Node, recipes.ErrLockLost)
	}
	for {
		if err := q.e.WaitConnected(ctx); err != nil {
			return zkerr.Namedf(q.what(), "%s %s: %w", verb, m.Node, err)
		}
		if q.e.SessionID() != l.sid {
			return lost()
		}
		res, err := q.e.Multi(ctx, ops...)
		switch {
		case err == nil:
			return nil
		case zkerr.IsRetryable(err):
			// Applied or not? Only we delete our marker in our session.
			if err := q.e.WaitConnected(ctx); err != nil {
				return zkerr.Namedf(q.what(), "%s %s: %w", verb, m.Node, err)
			}
			if q.e.SessionID() != l.sid {
				return lost()
			}
			ok, _, xerr := q.e.Exists(ctx, l.marker)
			if xerr != nil {
				if zkerr.IsRetryable(xerr) {
					continue
				}
				return zkerr.Namedf(q.what(), "%s %s: %w", verb, m.Node, xerr)
			}
			switch afterLostReply(ok, q.e.ConnSessionID(), l.sid) {
			case finishApplied:
				return nil
			case finishLost:
				return lost()
			}
			continue
		case failed(res) == 0: // the marker is gone: so is our lock
			return lost()
		case failed(res) == 1 && errors.Is(err, zk.ErrNoNode):
			// The item was deleted by someone else (a normal-mode
			// consumer, an IDQueue.Remove): release the lock.
			q.release(l)
			return errItemGone
		}
		q.release(l)
		return zkerr.Named(q.what(), zkop.Error(verb+" "+m.Node, ops, res, err))
	}
}

// tryRemove deletes one item (IDQueue.Remove), under its lock in
// lock-safety mode; false when it was gone or locked.
func (q *core) tryRemove(ctx context.Context, name string) (bool, error) {
	node := zkpath.JoinPath(q.full, name)
	if q.lockFull == "" {
		err := q.e.Retry(ctx, func() error { return q.e.Delete(ctx, node, -1) })
		if errors.Is(err, zk.ErrNoNode) {
			return false, nil
		}
		return err == nil, err
	}
	l, err := q.takeLock(ctx, name)
	if errors.Is(err, errTaken) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m := q.message(name, nil)
	m.lock = l
	switch err := m.finish(ctx, false); {
	case errors.Is(err, errItemGone):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
