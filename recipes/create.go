package recipes

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// ProtectedPrefix marks a node made by a protected create, as in Curator:
// the node's name is ProtectedPrefix + <uuid> + "-" + name.
const ProtectedPrefix = "_c_"

// NewUUID returns a random (version 4) UUID in its 36-character dashed form.
func NewUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("zkrecipes: crypto/rand failed: " + err.Error()) // never happens on supported platforms
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 36)
	j := 0
	for i, v := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hex[v>>4], hex[v&0xf]
		j += 2
	}
	return string(out)
}

// EnsureContainers makes sure dir and all its ancestors exist, creating the
// missing ones as container nodes (which the server deletes once they have
// had children and are empty again).
func (c *Client) EnsureContainers(ctx context.Context, dir string) error {
	if dir == "/" || dir == "" {
		return nil
	}
	for {
		err := c.Retry(ctx, func() error {
			_, err := c.CreateContainer(dir)
			return err
		})
		switch {
		case err == nil || errors.Is(err, zk.ErrNodeExists):
			return nil
		case errors.Is(err, zk.ErrNoNode):
			parent, _ := SplitPath(dir)
			if err := c.EnsureContainers(ctx, parent); err != nil {
				return err
			}
		default:
			return fmt.Errorf("zkrecipes: create container %s: %w", dir, err)
		}
	}
}

// CreateProtected creates an ephemeral-sequential node named
// _c_<uuid>-<name><sequence> under parent, creating missing parents as
// containers (again, if they are reaped between two attempts). If a reply
// is lost to a connection problem, it looks for its node by the uuid before
// creating again; if the session changed meanwhile, it deletes the node it
// finds and starts over. It returns the node's path and the session that
// owns it. When ctx ends it returns an error wrapping ctx.Err() and leaves
// no node behind (a node whose creation cannot yet be ruled out is looked
// for and deleted in the background).
func (c *Client) CreateProtected(ctx context.Context, parent, name string, data []byte) (string, int64, error) {
	prefix := ProtectedPrefix + NewUUID() + "-"
	target := JoinPath(parent, prefix+name)
	var (
		searching bool  // a create may have succeeded without our hearing of it
		sid       int64 // session the last create was sent in
		retry     backoff.BackOff
	)
	// pause waits before another attempt after err. It gives up when the
	// session the create was sent in is LOST (its node, if any, is gone or
	// going: a waiter must not wait on through a session loss) or when the
	// retry policy does.
	pause := func(err error) error {
		if snap := c.Snapshot(); IsRetryable(err) && snap.State == StateLost && snap.SessionID == sid {
			return fmt.Errorf("%w: %w", ErrSessionLost, err)
		}
		if retry == nil {
			retry = c.cfg.retry()
		}
		d := retry.NextBackOff()
		if d == backoff.Stop {
			return fmt.Errorf("retries exhausted: %w", err)
		}
		return c.sleep(ctx, d)
	}
	for {
		if err := c.check(); err != nil {
			return "", 0, err
		}
		if searching {
			kids, _, err := c.Children(parent)
			switch {
			case err == nil:
				searching = false
				if found := findPrefixed(kids, prefix); found != "" {
					p := JoinPath(parent, found)
					if c.conn.SessionID() == sid {
						return p, sid, nil
					}
					_ = c.GuaranteedDelete(p, sid) // a leftover of the old session
				}
			case errors.Is(err, zk.ErrNoNode):
				searching = false
			case IsRetryable(err):
				if werr := pause(err); werr != nil {
					c.cleanupProtected(parent, prefix, sid)
					return "", 0, fmt.Errorf("zkrecipes: create in %s: %w", parent, werr)
				}
				continue
			default:
				return "", 0, fmt.Errorf("zkrecipes: create in %s: %w", parent, err)
			}
		}
		if err := ctx.Err(); err != nil {
			return "", 0, fmt.Errorf("zkrecipes: create in %s: %w", parent, err)
		}
		sid = c.conn.SessionID()
		p, err := c.Create(target, data, zk.FlagEphemeral|zk.FlagSequence)
		switch {
		case err == nil:
			return p, sid, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := c.EnsureContainers(ctx, parent); err != nil {
				return "", 0, err
			}
		case IsRetryable(err):
			searching = true
			if werr := pause(err); werr != nil {
				c.cleanupProtected(parent, prefix, sid)
				return "", 0, fmt.Errorf("zkrecipes: create in %s: %w", parent, werr)
			}
		case errors.Is(err, zk.ErrSessionExpired):
			if werr := pause(err); werr != nil {
				return "", 0, fmt.Errorf("zkrecipes: create in %s: %w", parent, werr)
			}
		default:
			return "", 0, fmt.Errorf("zkrecipes: create %s: %w", target, err)
		}
	}
}

func findPrefixed(kids []string, prefix string) string {
	for _, k := range kids {
		if strings.HasPrefix(k, prefix) {
			return k
		}
	}
	return ""
}

// cleanupProtected looks, in the background, for a node whose creation
// reply was lost and deletes it; it stops when the session sid ends.
func (c *Client) cleanupProtected(parent, prefix string, sid int64) {
	c.background(func() {
		c.retryForever(sid, func() error {
			kids, _, err := c.Children(parent)
			if err != nil {
				if errors.Is(err, zk.ErrNoNode) {
					return nil
				}
				return err
			}
			if found := findPrefixed(kids, prefix); found != "" {
				return c.deleteOnce(JoinPath(parent, found))
			}
			return nil
		})
	})
}

// GuaranteedDelete deletes the node at path, which belongs to session sid.
// If the delete fails for a connection reason it keeps retrying in the
// background until it succeeds, the node is gone, the session ends or the
// client closes, so a released hold is never kept until session expiry. It
// returns nil when the node is gone or the delete was handed to the
// background (Stats().PendingDeletes counts those), and the error for any
// other failure.
func (c *Client) GuaranteedDelete(path string, sid int64) error {
	err := c.deleteOnce(path)
	switch {
	case err == nil || errors.Is(err, zk.ErrSessionExpired):
		return nil
	case !IsRetryable(err):
		return fmt.Errorf("zkrecipes: delete %s: %w", path, err)
	}
	c.stats.pendingDeletes.Add(1)
	if !c.background(func() {
		defer c.stats.pendingDeletes.Add(-1)
		c.retryForever(sid, func() error { return c.deleteOnce(path) })
	}) {
		c.stats.pendingDeletes.Add(-1)
	}
	return nil
}

// deleteOnce deletes path; a missing node counts as success.
func (c *Client) deleteOnce(path string) error {
	err := c.Delete(path, -1)
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		parent, name := SplitPath(path)
		bury(parent, name, name[max(0, len(name)-10):]) // the sequence suffix orders eviction
		return nil
	}
	return err
}

// retryForever runs op with backoff while it fails with retryable errors,
// until session sid is gone or the client closes.
func (c *Client) retryForever(sid int64, op func() error) {
	retry := DefaultRetryPolicy(0)
	for {
		err := op()
		if err == nil || !IsRetryable(err) {
			if err != nil && !errors.Is(err, zk.ErrSessionExpired) {
				c.log.Warn("zkrecipes: background cleanup failed", "err", err)
			}
			return
		}
		if err := c.sleep(context.Background(), retry.NextBackOff()); err != nil {
			return
		}
		if cur := c.conn.SessionID(); sid != 0 && cur != 0 && cur != sid {
			return // the session that owned the node has ended
		}
	}
}

// background runs fn on a goroutine Close waits for; it reports false (and
// does not run fn) when the client is already closed.
func (c *Client) background(fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
	return true
}
