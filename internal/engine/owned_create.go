package engine

// How an owned node is made: by a plain or a protected create, with what
// it meets at its path (a lost reply's node, an older session's, another
// session's), and recorded as its new incarnation.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// create makes a node with data (data generation dgen).
func (o *OwnedNode) create(ctx context.Context, data []byte, dgen uint64) error {
	c := o.c
	if o.spec.Protected {
		p, sid, lost, err := c.createProtected(ctx, o.parent, zkpath.NewUUID(), o.name, data, o.spec.Mode, o.spec.TTL)
		if err != nil {
			return o.explainTTL(err)
		}
		sweep := ""
		if lost {
			_, n := zkpath.SplitPath(p)
			sweep = protectedPrefixOf(n)
		}
		o.made(p, sid, true, dgen, sweep)
		return nil
	}
	path, mode, sequential := o.spec.Path, o.spec.Mode, o.sequential
	o.mu.Lock()
	if o.fixed != "" {
		path, mode, sequential = o.fixed, unsequenced(mode), false
	}
	o.mu.Unlock()
	for {
		sid := c.conn.SessionID()
		p, err := c.create(ctx, reqCreateMakingParents, path, data, mode, o.spec.TTL)
		switch {
		case err == nil:
			if !o.ephemeral {
				sid = 0
			} else if cur := c.conn.SessionID(); cur != sid {
				// Queued while disconnected and sent in a newer session.
				owner, oerr := ownerOf(ctx, c, p)
				if oerr != nil {
					if errors.Is(oerr, zk.ErrNoNode) {
						continue
					}
					return oerr
				}
				sid = owner
			}
			o.made(p, sid, true, dgen, "")
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := c.EnsureContainers(ctx, o.parent); err != nil {
				return err
			}
		case errors.Is(err, zk.ErrNodeExists) && !sequential:
			// Made by an attempt of ours whose reply was lost, by an
			// older session of ours, or by someone else: take it over
			// (the data is written to it; an ephemeral node of another
			// session is waited for until it goes).
			ok, st, err := c.Exists(ctx, path)
			switch {
			case err != nil:
				return err
			case !ok:
				continue
			}
			owner := st.EphemeralOwner
			mine := !o.ephemeral || owner == c.conn.SessionID()
			if !mine && o.takeOver() {
				c.log.Info("zkrecipes: our node's path holds another session's node (a predecessor's); deleting it",
					"what", o.spec.What, "node", c.Namespace().Strip(path), "owner", fmt.Sprintf("0x%x", owner))
				if err := c.Delete(ctx, path, st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
					return err
				}
				continue
			}
			if !mine {
				c.log.Warn("zkrecipes: our node's path is taken by another session; waiting for it to go",
					"what", o.spec.What, "node", c.Namespace().Strip(path), "owner", fmt.Sprintf("0x%x", owner))
			}
			o.made(path, owner, mine, 0, "")
			return nil
		default:
			return fmt.Errorf("create %s: %w", c.Namespace().Strip(path), o.explainTTL(zkerr.Explain(err)))
		}
	}
}

// takeOver reports whether a node of another session met now is to be
// deleted (TakeOver, before our first node).
func (o *OwnedNode) takeOver() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.spec.TakeOver && o.gen == 0
}

// explainTTL names the server setting a refused TTL create needs (Client
// create's refusedCreate does, for the creates it sends).
func (o *OwnedNode) explainTTL(err error) error {
	if isTTLMode(o.spec.Mode) && isUnimplemented(err) && !errors.Is(err, zkerr.ErrUnimplemented) {
		return ttlRefused(err)
	}
	return err
}

// isUnimplemented reports the server's UNIMPLEMENTED (-6), which
// go-zookeeper does not name.
func isUnimplemented(err error) bool {
	return err != nil && (errors.Is(err, errUnimplementedOp) || strings.Contains(err.Error(), "unknown error: -6"))
}

// MaxTTL is the longest TTL the server accepts (2^40-1 ms, about 34
// years: the TTL shares the ephemeralOwner field with a type tag).
const MaxTTL = time.Duration(1<<40-1) * time.Millisecond

// made records a new node.
func (o *OwnedNode) made(path string, sid int64, mine bool, dgen uint64, sweep string) {
	o.mu.Lock()
	o.gen++
	o.cur = Owned{Path: path, Session: sid, Gen: o.gen, Foreign: !mine}
	o.mine, o.wrote, o.sweep, o.lastErr = mine, dgen, sweep, nil
	if mine && o.spec.Downgrade && o.sequential && !o.spec.Protected && o.fixed == "" {
		o.fixed = path
	}
	n := o.cur
	o.broadcast()
	o.listeners.Post(n)
	o.mu.Unlock()
	if o.ephemeral && mine && o.spec.Hold {
		o.c.sm.track(path, sid)
	}
	if n.Recreated() {
		o.c.log.Warn("zkrecipes: a node of ours was made again", "what", o.spec.What, "node", o.c.Namespace().Strip(path))
	}
}
