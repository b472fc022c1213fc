package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Removing a persistent watch from the server.
//
// removeWatches names a path and a watcher type, and the server removes
// the connection's watches at that exact path (never below it):
//   - 3.6 to 3.8 know types Children (1), Data (2) and Any (3) only
//     (Watcher.WatcherType.fromInt); Persistent (4) and
//     PersistentRecursive (5) make FinalRequestProcessor throw, log an
//     ERROR with a stack trace ("Invalid integer value for conversion to
//     WatcherType") and answer MARSHALLINGERROR. addWatch set the watch
//     in both the data and the child WatchManager, which keep one entry
//     per connection and path whatever its mode, and removeWatcher drops
//     that entry and its mode (DataTree.removeWatch): Data or Children
//     removes half of it, Any all of it.
//   - 3.9 keeps the modes of a connection and path apart (WatchStats):
//     Persistent and PersistentRecursive remove that mode only, Any
//     (removeWatcher with a null mode) every mode there, one-shot data,
//     exists and children watches too.
//
// So Remove sends Any, as Curator's PersistentWatcher.close does: it
// removes the watch on every server that has persistent watches, without
// an error. It also removes any one-shot watch of the connection at the
// same path, which the client never holds there: guardOneShot refuses
// them on the root of a persistent watch, and makes them wait while its
// removeWatches is on the way (one sent before it would be removed and
// never fire; one sent after it reaches the server after it).
const removeAny = 3

// PersistentRemoveUnsupported reports whether the server refused to
// remove a persistent watch: removed watches then stay on the server
// until the connection ends, reporting to nobody. No server with
// persistent watches is known to refuse (see above).
func (c *Client) PersistentRemoveUnsupported() bool { return c != nil && c.pw.noRemove.Load() }

// Remove removes the watch: no event reaches it after Remove returns
// (Events reports the end). The server's watch is removed with the last
// of its owners. Remove returns an error only when ctx ended before the
// server answered; the watch is removed client-side either way.
func (w *PersistentWatch) Remove(ctx context.Context) error {
	c := w.c
	if ctx == nil {
		return fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	live := c.Check() == nil && !c.pw.noRemove.Load()
	c.pw.mu.Lock()
	e, last := c.pw.dropOwner(w)
	send := live && last && e.on != nil
	if send {
		defer c.pw.leave(w.path)()
	}
	c.pw.mu.Unlock()
	if !send {
		return nil
	}
	if err := c.pw.lock(ctx); err != nil {
		return zkerr.Namedf("watch "+c.Namespace().Strip(w.path), "remove: %w", err)
	}
	defer c.pw.unlock()
	c.pw.mu.Lock()
	again := c.pw.entries[w.path] != nil // added again meanwhile: keep the server's
	c.pw.mu.Unlock()
	wc := c.wire.usableConn()
	if again || wc == nil || wc != e.on {
		return nil // a new connection holds no watch of it
	}
	f := newFrame(8 + len(w.path)).str(w.path).int32(removeAny)
	r, err := wc.call(ctx, zopRemoveWatches, f, nil)
	if err != nil {
		return nil // not sent: the connection is going
	}
	err = c.pw.waitWire(ctx, wc, r)
	switch {
	case err == nil, errors.Is(err, errNoWatcher), zkerr.IsRetryable(err):
		return nil
	case errors.Is(err, errMarshalling), errors.Is(err, errUnimplementedOp), errors.Is(err, zk.ErrBadArguments):
		if !c.pw.noRemove.Swap(true) {
			c.log.Warn("zkrecipes: the server cannot remove persistent watches: removed ones stop client-side and stay on the server until the connection ends", "err", err)
		}
		return nil
	case ctx.Err() != nil:
		return zkerr.Namedf("watch "+c.Namespace().Strip(w.path), "remove: %w", err)
	}
	c.log.Warn("zkrecipes: removing a persistent watch failed", "path", c.Namespace().Strip(w.path), "err", err)
	return nil
}

// leave marks path as having its server watch removed, until the
// returned func is called; p.mu is held.
func (p *pwatches) leave(path string) func() {
	ch := make(chan struct{})
	if p.leaving == nil {
		p.leaving = map[string]chan struct{}{}
	}
	p.leaving[path] = ch // a removal before it still closes its own
	p.nLeaving.Store(int32(len(p.leaving)))
	return func() {
		p.mu.Lock()
		if p.leaving[path] == ch {
			delete(p.leaving, path)
			p.nLeaving.Store(int32(len(p.leaving)))
		}
		p.mu.Unlock()
		close(ch)
	}
}

// removeOwner drops w from its entry; last says the entry went with it.
func (p *pwatches) removeOwner(w *PersistentWatch) (e *pwEntry, last bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropOwner(w)
}

// dropOwner is removeOwner with p.mu held.
func (p *pwatches) dropOwner(w *PersistentWatch) (e *pwEntry, last bool) {
	e = p.entries[w.path]
	if w.removed || e == nil {
		return &pwEntry{}, false
	}
	w.removed = true
	w.q.Close()
	delete(e.owners, w)
	if len(e.owners) > 0 {
		return e, false
	}
	delete(p.entries, w.path)
	p.n.Add(-1)
	return e, true
}

// guardOneShot refuses a one-shot watch on the root of a persistent watch
// of the client (ZOOKEEPER-4466, see pwatch.go), and waits while the removal
// of one there is on the way (see removeAny), until ctx ends.
func (p *pwatches) guardOneShot(ctx context.Context, path string) error {
	c := p.c
	if c == nil || ctx == nil { // send refuses them
		return nil
	}
	for p.n.Load() > 0 || p.nLeaving.Load() > 0 {
		p.mu.Lock()
		e, ch := p.entries[path], p.leaving[path]
		p.mu.Unlock()
		if e != nil {
			return fmt.Errorf("%w: %s is the root of a persistent watch of this client: a one-shot watch there would replace it on ZooKeeper 3.6–3.8 (ZOOKEEPER-4466); read it without a watch, the persistent watch reports its changes", zkerr.ErrInvalidArgument, c.Namespace().Strip(path))
		}
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
