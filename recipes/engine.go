package recipes

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Contender is one node in a contender queue.
type Contender struct {
	Name string // the node's name under the recipe path
	Key  string // what contenders are ordered by
}

// Driver tells the contender engine the rules of one lock-like recipe, as
// Curator's LockInternalsDriver does.
type Driver interface {
	// SortKey returns the text a child node is ordered by.
	SortKey(child string) string
	// Check decides for the contender at index ours of sorted (lowest
	// first): acquired, or else the index (below ours) of the contender to
	// watch. sorted holds every contender below ours that may still exist,
	// and possibly some that are already gone, so a Check must only answer
	// acquired when removing any contenders below ours could not change
	// that answer (true of every Curator driver).
	Check(sorted []Contender, ours int) (acquired bool, watch int)
	// Relist reports whether the deletion of gone may have let a contender
	// appear below ours that the engine has not listed (a write lock
	// downgraded to a read node with the same sequence number, say). The
	// engine then lists the children again instead of walking its snapshot.
	Relist(gone Contender) bool
}

// StandardDriver is Curator's StandardLockInternalsDriver: contenders are
// ordered by the text after the last occurrence of the lock name, and the
// first MaxLeases of them hold. Extra names (Kazoo's "__lock__", say) are
// recognised as lock names too.
type StandardDriver struct {
	LockName  string
	Extra     []string
	MaxLeases int
}

// SortKey returns the text after the last occurrence of the lock name (or
// an extra name), or the whole name when none occurs, as Curator does.
func (d *StandardDriver) SortKey(child string) string {
	return SortKey(child, d.LockName, d.Extra...)
}

// Check grants the first MaxLeases contenders; a waiter watches the
// contender MaxLeases places ahead of it.
func (d *StandardDriver) Check(_ []Contender, ours int) (bool, int) {
	n := d.MaxLeases
	if n < 1 {
		n = 1
	}
	if ours < n {
		return true, 0
	}
	return false, ours - n
}

// Relist is false: only sequential nodes are ever created in a standard queue.
func (d *StandardDriver) Relist(Contender) bool { return false }

// SortKey returns the text of child after the last occurrence of lockName,
// or of the first of extra that occurs in it, or child itself when none
// occurs (Curator's fixForSorting).
func SortKey(child, lockName string, extra ...string) string {
	if i := strings.LastIndex(child, lockName); i >= 0 {
		return child[i+len(lockName):]
	}
	for _, e := range extra {
		if i := strings.LastIndex(child, e); i >= 0 {
			return child[i+len(e):]
		}
	}
	return child
}

// SortContenders orders child names by the driver's key (ties by name).
func SortContenders(children []string, d Driver) []Contender {
	out := make([]Contender, len(children))
	for i, ch := range children {
		out[i] = Contender{Name: ch, Key: d.SortKey(ch)}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Contest is one contender's place in a queue: a protected
// ephemeral-sequential node under a recipe path, and the work of waiting
// until the driver says it holds. Mutex, read/write lock, semaphore and
// leader latch all queue through it.
//
// A waiter lists the children once, then watches exactly one contender
// below it (getData with a watch, so no watch is left on a missing node).
// When that one goes, it does not list again: contenders below it can only
// disappear, so it drops from its own snapshot every contender this Client
// knows to be gone and either holds, or probes the one candidate left, or,
// when several contenders of unknown fate remain, lists once more.
type Contest struct {
	c      *Client
	parent string
	path   string
	me     Contender
	sid    int64
	driver Driver
	know   *parentKnowledge
	done   bool
}

// Enter creates our node, _c_<uuid>-<lockName><seq>, under parent (a server
// path) with the given data, and returns the contest. Call Acquire next.
func (c *Client) Enter(ctx context.Context, parent, lockName string, data []byte, d Driver) (*Contest, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("%w: nil driver", ErrInvalidArgument)
	}
	path, sid, err := c.CreateProtected(ctx, parent, lockName, data)
	if err != nil {
		return nil, err
	}
	_, name := SplitPath(path)
	return &Contest{
		c: c, parent: parent, path: path, sid: sid, driver: d,
		me: Contender{Name: name, Key: d.SortKey(name)},
	}, nil
}

// Path returns the server path of our node.
func (ct *Contest) Path() string { return ct.path }

// Node returns our node's name and sort key.
func (ct *Contest) Node() Contender { return ct.me }

// Session returns the id of the session that owns our node.
func (ct *Contest) Session() int64 { return ct.sid }

// Signals tell a holder when its hold may be gone.
type Signals struct {
	// Done closes when the hold may be gone under the client's error
	// policy: at SUSPENDED or LOST (Standard), or at LOST only (Session);
	// also when the client is closed.
	Done <-chan struct{}
	// Lost closes when the session that owns the hold is lost (or the
	// client closed).
	Lost <-chan struct{}
}

// Acquire waits until the driver says our node holds, and returns the
// signals of the hold.
// With wait false it makes one check and, if that does not hold, leaves.
// On every outcome other than holding, our node is removed: held is false
// and err says why (wrapping ctx.Err() when ctx ended, ErrSessionLost when
// the session ended, ErrClosed when the client closed).
func (ct *Contest) Acquire(ctx context.Context, wait bool) (held bool, sig Signals, err error) {
	held, sig, err = ct.acquire(ctx, wait)
	if !held {
		if lerr := ct.Leave(); lerr != nil && err == nil {
			err = lerr
		}
	}
	return held, sig, err
}

func (ct *Contest) acquire(ctx context.Context, wait bool) (bool, Signals, error) {
	c := ct.c
	var (
		below   []Contender // contenders below ours that may still exist
		listed  bool
		target  string          // name of the contender we watch
		watchCh <-chan zk.Event // live watch on target
	)
	for {
		if err := c.check(); err != nil {
			return false, Signals{}, err
		}
		snap := c.Snapshot()
		// Our node lives as long as session ct.sid. The state machine may
		// still be LOST for an older session when the node was made in a
		// newer one: then wait for it to catch up.
		if snap.SessionID == ct.sid && snap.State == StateLost || snap.State.IsConnected() && snap.SessionID != ct.sid {
			return false, Signals{}, fmt.Errorf("%w: waiting for %s", ErrSessionLost, ct.path)
		}
		if !snap.State.IsConnected() {
			if !wait {
				return false, Signals{}, fmt.Errorf("zkrecipes: acquire %s: not connected (%v)", ct.path, snap.State)
			}
			if err := ct.waitChange(ctx, snap); err != nil {
				return false, Signals{}, err
			}
			continue
		}
		if !listed {
			kids, pstat, err := c.Children(ct.parent)
			if err != nil {
				if errors.Is(err, zk.ErrNoNode) {
					return false, Signals{}, ct.nodeGone()
				}
				if err := ct.pause(ctx, err); err != nil {
					return false, Signals{}, err
				}
				continue
			}
			sorted := SortContenders(kids, ct.driver)
			ours := -1
			for i, k := range sorted {
				if k.Name == ct.me.Name {
					ours = i
					break
				}
			}
			if ours < 0 {
				return false, Signals{}, ct.nodeGone()
			}
			below, listed = sorted[:ours:ours], true
			if ct.know == nil {
				ct.know = c.knowledge.enter(ct.parent, pstat.Czxid)
			}
			target, watchCh = "", nil
		}
		below = ct.know.prune(below)
		ok, w := ct.driver.Check(append(below, ct.me), len(below))
		if ok {
			if hold := c.HoldSignal(snap); !isClosed(hold) {
				if len(below) == 0 {
					ct.know.allGoneBelow(ct.me.Key)
				}
				return true, Signals{Done: hold, Lost: snap.Lost}, nil
			}
			continue // the connection blinked while we looked; look again
		}
		if !wait {
			return false, Signals{}, nil
		}
		next := below[w].Name
		if next != target || watchCh == nil {
			_, _, ch, err := c.GetW(JoinPath(ct.parent, next))
			switch {
			case err == nil:
				target, watchCh = next, ch
			case errors.Is(err, zk.ErrNoNode):
				ct.know.gone(below[w])
				if ct.know.unknown(below[:w]) > 0 {
					listed = false // more of unknown fate below: list again
				}
				continue
			default:
				if err := ct.pause(ctx, err); err != nil {
					return false, Signals{}, err
				}
				continue
			}
		}
		select {
		case ev := <-watchCh:
			watchCh = nil
			switch ev.Type {
			case zk.EventNodeDeleted:
				gone := below[w]
				ct.know.gone(gone)
				target = ""
				if ct.driver.Relist(gone) {
					listed = false
				} else if ct.know.unknown(below[:w]) > 1 {
					// Several contenders below the one that went may still
					// exist: one list is cheaper than probing each.
					listed = false
				}
			case zk.EventNotWatching:
				target = "" // session ended or client closing: the loop top decides
			}
		case <-snap.Changed:
		case <-ctx.Done():
			return false, Signals{}, fmt.Errorf("zkrecipes: waiting for %s: %w", ct.path, ctx.Err())
		case <-c.closeCh:
			return false, Signals{}, ErrClosed
		}
	}
}

// waitChange waits for the next connection state change.
func (ct *Contest) waitChange(ctx context.Context, snap Snapshot) error {
	select {
	case <-snap.Changed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("zkrecipes: waiting for %s: %w", ct.path, ctx.Err())
	case <-ct.c.closeCh:
		return ErrClosed
	}
}

// pause handles a failed request: retryable errors wait for the next state
// change or a short backoff; others end the acquisition.
func (ct *Contest) pause(ctx context.Context, err error) error {
	if errors.Is(err, zk.ErrSessionExpired) {
		return fmt.Errorf("%w: waiting for %s", ErrSessionLost, ct.path)
	}
	if !IsRetryable(err) {
		return fmt.Errorf("zkrecipes: waiting for %s: %w", ct.path, err)
	}
	if serr := ct.c.sleep(ctx, retryPause); serr != nil {
		return fmt.Errorf("zkrecipes: waiting for %s: %w", ct.path, serr)
	}
	return nil
}

// nodeGone explains why our node is missing.
func (ct *Contest) nodeGone() error {
	if ct.c.conn.SessionID() != ct.sid {
		return fmt.Errorf("%w: node %s went with its session", ErrSessionLost, ct.path)
	}
	return fmt.Errorf("%w: node %s was deleted by someone else", ErrLockLost, ct.path)
}

// Leave deletes our node (a guaranteed delete) and ends the contest. It is
// safe to call more than once.
func (ct *Contest) Leave() error {
	if ct.done {
		return nil
	}
	ct.done = true
	err := ct.c.GuaranteedDelete(ct.path, ct.sid)
	if ct.know != nil {
		ct.c.knowledge.leave(ct.know)
		ct.know = nil
	}
	return err
}

// retryPause is how long an acquisition waits after a transient error
// while the client still reports a connection.
const retryPause = 20 * time.Millisecond

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
