package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Participation describes a long-lived contender: a node kept in a queue
// for as long as the participant runs, as a leader latch keeps its latch
// node, holding in terms.
type Participation struct {
	Parent   string // server path of the queue
	LockName string // e.g. "latch-"
	Data     []byte
	Driver   *contend.Driver
	Options  []EnterOption // EnterVerifyOwner, for a leader latch
	// OnNode, if set, is called with the server path of each node made.
	OnNode func(path string)
	// OnTerm is called when a term starts. The Hold's Done closes when the
	// term may be over: SUSPENDED or LOST under the client's error policy,
	// our node deleted, the participation ended. OnTerm runs on the
	// participant's goroutine and must not block.
	OnTerm func(*Hold)
	// OnTermEnd, if set, is called with the term's Hold once the
	// participant has seen the term end (its Done is closed by then), on
	// the participant's goroutine, before any later OnTerm.
	OnTermEnd func(*Hold)
}

// Participate runs a Participation until ctx ends or the client closes,
// and returns an error wrapping ctx.Err() or ErrClosed. Its node is an
// OwnedNode (protected, ephemeral sequential): made in the background,
// made again when it goes (deleted by someone, with the whole queue path,
// or with a lost session), and checked to belong to the current session
// before each wait. It waits until the driver says the node holds; then it
// calls OnTerm with a fresh Hold for the term. When a term or a wait is
// cut short it checks the node again: while it is there and ours it goes
// on with it (keeping its place); otherwise it goes on with the new node,
// at the back of the queue. When it returns, its node is deleted and the
// last term's Hold is done.
//
// Ending ctx is how a participant leaves: the term's Done closes and
// OnTermEnd runs before the node is deleted (a guaranteed delete, so
// leaving never blocks on a dead connection). A Participation keeps no
// state between runs: running it again enters with a new node, at the
// back of the queue (a leader latch's Resign, then Start).
func (c *Client) Participate(ctx context.Context, p Participation) error {
	if err := c.Check(); err != nil {
		return err
	}
	if p.Driver == nil || p.OnTerm == nil {
		return fmt.Errorf("%w: participation needs a driver and OnTerm", zkerr.ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	if err := checkCreate(ctx, p.Parent, p.LockName); err != nil {
		return err
	}
	if p.LockName == "" {
		return fmt.Errorf("%w: empty lock name", zkerr.ErrInvalidArgument)
	}
	own, err := c.Own(OwnedSpec{
		Path: zkpath.JoinPath(p.Parent, p.LockName), Mode: zk.FlagEphemeral | zk.FlagSequence, Protected: true,
		Data: p.Data, What: "participant in " + c.Namespace().Strip(p.Parent), Hold: true,
	})
	if err != nil {
		return err
	}
	defer func() { _ = own.Close(context.Background()) }()
	cur, err := own.Await(ctx)
	if err != nil {
		return err
	}
	node := ""
	for {
		if cur.Path != node {
			node = cur.Path
			if p.OnNode != nil {
				p.OnNode(node)
			}
		}
		ct := newContest(c, p.Parent, cur.Path, cur.Session, p.Driver, p.Options)
		err := ct.participate(ctx, p)
		ct.drop()
		if err != nil {
			return err
		}
		if cur, err = own.Verify(ctx); err != nil {
			return err
		}
	}
}

// endsWithSession reports errors after which a new node fixes things.
func endsWithSession(err error) bool {
	return errors.Is(err, zkerr.ErrSessionLost) || errors.Is(err, zkerr.ErrLockLost) || errors.Is(err, zk.ErrSessionExpired)
}

// participate holds terms with ct's node. It returns nil when a new
// node is needed, and the error that ends the participation otherwise.
func (ct *Contest) participate(ctx context.Context, p Participation) error {
	c := ct.c
	for {
		_, sig, err := ct.acquire(ctx, true)
		ct.met.acquired(err == nil, err)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, zkerr.ErrClosed) {
				return err
			}
			if !endsWithSession(err) && !zkerr.IsRetryable(err) {
				return err
			}
			return nil
		}
		h := NewHold(c, ct.path, sig)
		p.OnTerm(h)
		gone, err := ct.watchTerm(ctx, sig)
		h.MarkReleased()
		ct.met.released()
		if p.OnTermEnd != nil {
			p.OnTermEnd(h)
		}
		if err != nil {
			return err
		}
		if gone {
			return nil
		}
		// The connection failed under us: wait for it, then check again.
		if err := c.WaitConnected(ctx); err != nil {
			return err
		}
	}
}

// watchTerm waits for the end of a term: gone when our node was deleted
// (or its session is over: a new node is needed), false when the hold's
// signal closed, an error when ctx ended or the client closed.
func (ct *Contest) watchTerm(ctx context.Context, sig Signals) (gone bool, err error) {
	c := ct.c
	_, err = c.Await(ctx, Wait{What: ct.path, Session: ct.sid, Until: sig.Done}, func(_ Snapshot, _ Wake) (Look, error) {
		ok, _, watch, err := c.ExistsW(ctx, ct.path)
		switch {
		case err != nil:
			return Look{}, fmt.Errorf("zkrecipes: holding %s: %w", ct.path, err)
		case !ok:
			return Look{Done: true}, nil // deleted
		}
		return Look{Watch: watch}, nil // a data change, or the end of the connection: look again
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errUntil):
		return false, nil
	case ctx.Err() != nil || errors.Is(err, zkerr.ErrClosed):
		return false, err
	}
	return true, nil // the session is over, or the node cannot be read: a new node
}
