package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// createProtected is the one protected create, in any mode (ephemeral or
// persistent, sequential or not, with the TTL of a TTL mode): the node is
// named _c_<uuid>-<name> under parent, and a create whose reply was lost
// is found again by its uuid instead of being made twice. It also reports
// whether a reply was lost on the way (then a late copy of an earlier
// create may still land: the caller sweeps for it when it leaves). A
// persistent node outlives the session it was made in: one found after a
// new session began is ours all the same.
func (c *Client) createProtected(ctx context.Context, parent, uuid, name string, data []byte, mode int32, ttl time.Duration) (_ string, _ int64, lostReply bool, _ error) {
	if err := c.Check(); err != nil {
		return "", 0, false, err
	}
	if err := checkCreate(ctx, parent, name); err != nil {
		return "", 0, false, err
	}
	pc := &protectedCreate{
		c: c, ctx: ctx, parent: parent, name: name, data: data, mode: mode, ttl: ttl,
		sequential: isSequentialMode(mode),
		ephemeral:  isEphemeralMode(mode),
		retry:      c.Backoff(),
	}
	pc.target, pc.prefix = protectedPath(parent, uuid, name)
	for {
		if err := c.Check(); err != nil {
			return "", 0, pc.lostReply, err
		}
		if pc.searching {
			p, owner, next, err := pc.search()
			switch next {
			case stepDone:
				return p, owner, pc.lostReply, err
			case stepAgain:
				continue
			}
		}
		if p, owner, done, err := pc.attempt(); done {
			return p, owner, pc.lostReply, err
		}
	}
}

// protectedCreate is the state of a protected create's loop
// (createProtected): what it makes, and what it knows so far.
type protectedCreate struct {
	c              *Client
	ctx            context.Context
	parent, name   string
	data           []byte
	mode           int32
	ttl            time.Duration
	sequential     bool
	ephemeral      bool
	target, prefix string // the node's path and its "_c_<uuid>-" prefix

	searching bool  // a create may have succeeded without our hearing of it
	lostReply bool  // a reply was lost on the way (a late copy may land)
	sid       int64 // session the last create was sent in
	retry     Backoff
}

// createStep says where a protected create's loop goes after a step.
type createStep int

const (
	stepOn    createStep = iota // on to the create
	stepAgain                   // back to the top of the loop
	stepDone                    // return what the step returned
)

// owner returns the session a node of ours goes with (0: none).
func (pc *protectedCreate) owner(sid int64) int64 {
	if pc.ephemeral {
		return sid
	}
	return 0
}

// fail wraps err as the create's error.
func (pc *protectedCreate) fail(err error) error {
	return fmt.Errorf("zkrecipes: create in %s: %w", pc.parent, err)
}

// pause waits before another attempt after err. It gives up when the
// session the create was sent in is LOST (its node, if any, is gone or
// going: a waiter must not wait on through a session loss) or when the
// retry policy does.
func (pc *protectedCreate) pause(err error) error {
	if snap := pc.c.Snapshot(); zkerr.IsRetryable(err) && snap.State == zkstate.StateLost && snap.SessionID == pc.sid {
		return fmt.Errorf("%w: %w", zkerr.ErrSessionLost, err)
	}
	d, ok := pc.retry.next()
	if !ok {
		return fmt.Errorf("retries exhausted: %w", err)
	}
	return sleep(pc.ctx, d, pc.c.closeCh)
}

// search looks, after a lost reply, for the node an earlier create made:
// it returns it (stepDone), or deletes a leftover of an old session and
// goes on to create (stepOn), or starts the loop over after a pause
// (stepAgain).
func (pc *protectedCreate) search() (string, int64, createStep, error) {
	c, ctx, parent := pc.c, pc.ctx, pc.parent
	found, err := pc.find()
	switch {
	case ctx.Err() != nil:
		c.del.sweepProtected(parent, pc.prefix, pc.owner(pc.sid)) // a copy of ours may exist
		return "", 0, stepDone, pc.fail(ctx.Err())
	case err == nil:
		pc.searching = false
		if found != "" {
			p := zkpath.JoinPath(parent, found)
			if c.conn.SessionID() == pc.sid || !pc.ephemeral {
				return p, pc.owner(pc.sid), stepDone, nil
			}
			_ = c.GuaranteedDelete(context.Background(), p, pc.sid) // a leftover of the old session
		}
		return "", 0, stepOn, nil
	case zkerr.IsRetryable(err):
		if werr := pc.pause(err); werr != nil {
			c.del.sweepProtected(parent, pc.prefix, pc.owner(pc.sid))
			return "", 0, stepDone, pc.fail(zkerr.Explain(werr))
		}
		return "", 0, stepAgain, nil
	default:
		return "", 0, stepDone, pc.fail(zkerr.Explain(err))
	}
}

// attempt sends one create, once connected, and returns its node (done),
// or an error (done), or not done: the loop goes round again.
func (pc *protectedCreate) attempt() (_ string, _ int64, done bool, _ error) {
	c, ctx := pc.c, pc.ctx
	if err := ctx.Err(); err != nil {
		return "", 0, true, pc.fail(zkerr.Explain(err))
	}
	if err := pc.awaitConnection(); err != nil {
		if pc.lostReply {
			c.del.sweepProtected(pc.parent, pc.prefix, pc.owner(pc.sid))
		}
		return "", 0, true, pc.fail(err)
	}
	if cur := c.conn.SessionID(); pc.ephemeral && pc.sid != 0 && cur != pc.sid {
		// A new session: a new name, so that a name once seen gone
		// never exists again (the engine's knowledge relies on it).
		pc.target, pc.prefix = protectedPath(pc.parent, zkpath.NewUUID(), pc.name)
	}
	pc.sid = c.conn.SessionID()
	p, err := c.create(ctx, reqCreateMakingParents, pc.target, pc.data, pc.mode, pc.ttl)
	if err == nil && pc.ephemeral && c.conn.SessionID() != pc.sid {
		return pc.adopt(p)
	}
	return pc.settle(p, err)
}

// adopt returns the ephemeral node p, made while the session changed,
// with the session that owns it. go-zookeeper queues a request made while
// disconnected and sends it on the next connection, in whatever session
// that has: the node belongs to the session that made it, which its
// ephemeralOwner says. (Found by the chaos suite: a node taken for the
// old session's was never deleted.)
func (pc *protectedCreate) adopt(p string) (_ string, _ int64, done bool, _ error) {
	owner, oerr := ownerOf(pc.ctx, pc.c, p)
	switch {
	case oerr == nil:
		return p, owner, true, nil
	case errors.Is(oerr, zk.ErrNoNode):
		return "", 0, false, nil // made in the old session, gone with it: again
	default:
		pc.c.del.sweepProtected(pc.parent, pc.prefix, 0)
		return "", 0, true, pc.fail(zkerr.Explain(oerr))
	}
}

// settle acts on a create's reply: it returns the node, or an error, or
// readies the next attempt (parents made, a search begun, a pause taken).
func (pc *protectedCreate) settle(p string, err error) (_ string, _ int64, done bool, _ error) {
	c, ctx := pc.c, pc.ctx
	switch {
	case err == nil:
		return p, pc.owner(pc.sid), true, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// Abandoned in flight: a late reply deletes what it made, and
		// a copy from an earlier lost reply is swept for.
		if pc.lostReply {
			c.del.sweepProtected(pc.parent, pc.prefix, pc.owner(pc.sid))
		}
		return "", 0, true, pc.fail(err)
	case errors.Is(err, zk.ErrNoNode):
		if err := c.EnsureContainers(ctx, pc.parent); err != nil {
			return "", 0, true, err
		}
	case errors.Is(err, zk.ErrNodeExists) && !pc.sequential:
		// Only we use this uuid: an earlier attempt of ours made it.
		pc.searching = true
	case zkerr.IsRetryable(err):
		pc.searching, pc.lostReply = true, true
		if werr := pc.pause(err); werr != nil {
			c.del.sweepProtected(pc.parent, pc.prefix, pc.owner(pc.sid))
			return "", 0, true, pc.fail(zkerr.Explain(werr))
		}
	case errors.Is(err, zk.ErrSessionExpired):
		if werr := pc.pause(err); werr != nil {
			return "", 0, true, pc.fail(zkerr.Explain(werr))
		}
	default:
		return "", 0, true, fmt.Errorf("zkrecipes: create %s: %w", pc.target, zkerr.Explain(err))
	}
	return "", 0, false, nil
}
