package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// Wait describes one Await: what it waits for and when it must give up.
type Wait struct {
	// What names what is awaited in errors ("waiting for <What>"): a node
	// or a recipe path.
	What string
	// Session is the session the wait depends on (the one that owns the
	// caller's node), or 0 when it depends on none. When that session is
	// LOST, or the client is connected in another session, Await returns
	// an error wrapping ErrSessionLost.
	Session int64
	// Once makes one look and never waits: Await returns false when the
	// look is not Done, and ErrNotConnected when the client has no
	// connection.
	Once bool
	// Until, when it closes, ends the wait with an error wrapping
	// errUntil (a term whose hold signal closed, say).
	Until <-chan struct{}
}

// Look is the answer of one look at ZooKeeper: done, or what to wait for
// before the next look.
type Look struct {
	// Done ends the wait: the condition holds.
	Done bool
	// Again asks for another look at once.
	Again bool
	// Watch fires when another look may give another answer: the watch
	// the look left (it stays armed across looks that return it again).
	Watch <-chan zk.Event
	// Other is a second watch the look left, on another node (a queue
	// item's lock, say): it wakes the wait as Watch does.
	Other <-chan zk.Event
	// Also closes when another look may give another answer for a reason
	// ZooKeeper does not tell (a semaphore's limit changed, say).
	Also <-chan struct{}
	// At, when set, wakes the wait at that time (a delayed item falling
	// due, say).
	At time.Time
}

// Wake says what ended the wait before a look. The first look, and a
// look after a pause, have a zero Wake.
type Wake struct {
	// Event is the event the last look's Watch delivered, or nil. The
	// watch has fired: a look that wants another must read again.
	Event *zk.Event
	// Also is true when the last look's Also closed.
	Also bool
	// At is true when the last look's At came.
	At bool
	// State is true when the connection state changed.
	State bool
}

// errUntil is returned by Await when Wait.Until closed.
var errUntil = errors.New("zkrecipes: the wait was ended by its caller")

// Await is the one way a recipe waits: until a condition over a watched
// read holds, ctx ends, the client closes or the session is lost. It calls
// look with the current connection snapshot whenever the client is
// connected, and after each look that is not Done it waits for the look's
// Watch or Also, a connection state change, Wait.Until, ctx or Close, then
// looks again.
//
//   - The lost-session rule is here and nowhere else: with Wait.Session
//     set, a LOST for that session, or a connection in another one, ends
//     the wait with ErrSessionLost.
//   - While the client is not connected it waits for the connection (with
//     Wait.Once it returns ErrNotConnected).
//   - A look that fails with a retryable error (IsRetryable) is tried again
//     after a short pause; a session expiry ends the wait with
//     ErrSessionLost; any other error ends it and is returned as it is.
//
// It returns true when a look was Done; false, with a nil error, only
// when Wait.Once and the look was not Done.
func (c *Client) Await(ctx context.Context, w Wait, look func(Snapshot, Wake) (Look, error)) (bool, error) {
	if ctx == nil {
		return false, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	var (
		wake Wake
		last Look
	)
	for {
		if err := c.Check(); err != nil {
			return false, err
		}
		snap := c.Snapshot()
		if sessionGone(snap, w.Session) {
			return false, fmt.Errorf("%w: waiting for %s", zkerr.ErrSessionLost, w.What)
		}
		if !snap.State.IsConnected() {
			if w.Once {
				return false, fmt.Errorf("zkrecipes: waiting for %s: %w (%v)", w.What, zkerr.ErrNotConnected, snap.State)
			}
			if err := (Look{}).block(ctx, w, snap, &wake, c.closeCh); err != nil {
				return false, err
			}
			continue
		}
		l, err := look(snap, wake)
		wake = Wake{}
		switch {
		case err == nil:
		case errors.Is(err, zk.ErrSessionExpired):
			return false, fmt.Errorf("%w: waiting for %s", zkerr.ErrSessionLost, w.What)
		case zkerr.IsRetryable(err):
			c.met.countRetry()
			if serr := sleep(ctx, retryPause, c.closeCh); serr != nil {
				return false, fmt.Errorf("zkrecipes: waiting for %s: %w", w.What, serr)
			}
			continue
		default:
			return false, err
		}
		switch {
		case l.Done:
			return true, nil
		case l.Again:
			continue
		case w.Once:
			return false, nil
		}
		last = l
		if err := last.block(ctx, w, snap, &wake, c.closeCh); err != nil {
			return false, err
		}
	}
}

// sessionGone is the lost-session rule: a wait that depends on session
// sid is over when sid is LOST, or when the client is connected in another
// session. (The state machine may still be LOST for an older session when
// sid is a newer one: then the wait goes on until it catches up.)
func sessionGone(snap Snapshot, sid int64) bool {
	if sid == 0 {
		return false
	}
	return snap.SessionID == sid && snap.State == zkstate.StateLost ||
		snap.State.IsConnected() && snap.SessionID != sid
}

// block waits for what l names, a state change after snap, w.Until, ctx
// or closed (the client's Done), and records in wake what ended it.
func (l Look) block(ctx context.Context, w Wait, snap Snapshot, wake *Wake, closed <-chan struct{}) error {
	var at <-chan time.Time
	if !l.At.IsZero() {
		t := time.NewTimer(time.Until(l.At))
		defer t.Stop()
		at = t.C
	}
	select {
	case ev := <-l.Watch:
		wake.Event = &ev
	case ev := <-l.Other:
		wake.Event = &ev
	case <-l.Also:
		wake.Also = true
	case <-at:
		wake.At = true
	case <-snap.Changed:
		wake.State = true
	case <-w.Until:
		return fmt.Errorf("zkrecipes: waiting for %s: %w", w.What, errUntil)
	case <-ctx.Done():
		return fmt.Errorf("zkrecipes: waiting for %s: %w", w.What, ctx.Err())
	case <-closed:
		return zkerr.ErrClientClosed
	}
	return nil
}

// ChildrenOrCreation is the watched read of a look that waits on a
// directory: its children with a children watch, or, while it does not
// exist, an exists watch for its creation (exists false, no children).
// The watch it returns is the look's Watch.
func (c *Client) ChildrenOrCreation(ctx context.Context, path string) (kids []string, exists bool, watch <-chan zk.Event, err error) {
	for {
		kids, _, ch, err := c.ChildrenW(ctx, path)
		if !errors.Is(err, zk.ErrNoNode) {
			return kids, err == nil, ch, err
		}
		there, _, ech, err := c.ExistsW(ctx, path)
		if err != nil || !there {
			return nil, false, ech, err
		}
		// created meanwhile: list it with a children watch
	}
}
