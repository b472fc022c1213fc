package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Contest is one contender's place in a queue: a protected ephemeral node
// under a recipe path, and the work of waiting until the driver says it
// holds. Mutex, read/write lock, semaphore and leader latch all queue
// through it.
//
// A waiter lists the children once, then watches exactly one contender
// ahead of it (getData with a watch, so no watch is left on a missing
// node). When that one goes, it does not list again: contenders ahead of it
// can only disappear, so it drops from its own snapshot every contender
// this Client knows to be gone and either holds, or probes the one
// blocking candidate left, or, when several blocking contenders of unknown
// fate remain, lists once more. A listing that shows another node with our
// own uuid prefix has found a ghost of ours (a create whose reply was
// lost, repeated): it is deleted at once.
type Contest struct {
	c           *Client
	parent      string
	path        string
	me          contend.Contender
	prefix      string // _c_<uuid>- of our node
	sid         int64
	driver      *contend.Driver
	granted     bool // held from the start (EnterGranted)
	verifyOwner bool
	sweep       bool // a create reply was lost: a late copy may still land
	know        *parentKnowledge
	done        bool
	met         contestMetrics // measures nothing without metrics
}

// EnterOption configures Enter.
type EnterOption func(*enterConfig)

type enterConfig struct {
	fixed       string
	hasFixed    bool
	granted     bool
	verifyOwner bool
	since       time.Time // the wait began, for metrics; zero: at Enter
}

// EnterGranted makes the node hold from the start, whatever is ahead of
// it: the recipe decided, where the node is made, that it may hold (the
// read/write lock grants the read lock to the write lock's owner, whose
// read node then sorts where the write node is; see EnterAtSequence).
// Acquire still applies the lost-session rule.
func EnterGranted() EnterOption {
	return func(e *enterConfig) { e.granted = true }
}

// EnterAtSequence makes the node ephemeral but not sequential, named
// _c_<uuid>-<lockName><seq>: it sorts where a sequential node with that
// sequence suffix sorts (the read/write lock's downgrade node takes the
// write node's sequence). seq must be ten digits, as the server writes
// them; Enter refuses anything else with ErrInvalidArgument.
func EnterAtSequence(seq string) EnterOption {
	return func(e *enterConfig) { e.fixed, e.hasFixed = seq, true }
}

// EnterWaitingSince makes the contest's wait, in metrics, begin at since
// rather than at Enter: the semaphore's wait includes its internal lock's.
func EnterWaitingSince(since time.Time) EnterOption {
	return func(e *enterConfig) { e.since = since }
}

// isSequence reports whether s has the form of a server sequence suffix:
// ten decimal digits.
func isSequence(s string) bool {
	if len(s) != 10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// EnterVerifyOwner makes the engine confirm, before it reports a hold,
// that our node's ephemeralOwner is the client's current session (one
// exists request). The leader latch needs it: a node first in the queue
// but made in an older session must not make a leader (Curator's
// CURATOR-696 double leader).
func EnterVerifyOwner() EnterOption {
	return func(e *enterConfig) { e.verifyOwner = true }
}

// Enter creates our node, _c_<uuid>-<lockName><seq>, under parent (a server
// path) with the given data, and returns the contest. Call Acquire next.
func (c *Client) Enter(ctx context.Context, parent, lockName string, data []byte, d *contend.Driver, opts ...EnterOption) (*Contest, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("%w: nil driver", zkerr.ErrInvalidArgument)
	}
	if lockName == "" {
		return nil, fmt.Errorf("%w: empty lock name", zkerr.ErrInvalidArgument)
	}
	var since time.Time
	if c.met != nil {
		since = time.Now()
	}
	var cfg enterConfig
	if len(opts) > 0 {
		cfg = applyEnterOptions(opts)
		if cfg.hasFixed && !isSequence(cfg.fixed) {
			return nil, fmt.Errorf("%w: sequence %q is not 10 digits", zkerr.ErrInvalidArgument, cfg.fixed)
		}
	}
	name := lockName
	if cfg.hasFixed {
		name += cfg.fixed
	}
	if !cfg.since.IsZero() {
		since = cfg.since
	}
	path, sid, lostReply, err := c.createProtected(ctx, parent, zkpath.NewUUID(), name, data, ephemeralMode(!cfg.hasFixed), 0)
	var met contestMetrics
	if c.met != nil {
		met = c.met.contest(d, c.Namespace().Strip(parent), since)
		if err != nil {
			met.acquired(false, err)
		}
	}
	if err != nil {
		return nil, err
	}
	_, name = zkpath.SplitPath(path)
	c.sm.track(path, sid)
	return &Contest{
		c: c, parent: parent, path: path, sid: sid, driver: d,
		granted: cfg.granted, verifyOwner: cfg.verifyOwner, sweep: lostReply,
		me:     contend.Contender{Name: name, Key: d.SortKey(name)},
		prefix: protectedPrefixOf(name),
		met:    met,
	}, nil
}

// newContest makes a contest on an existing node of ours, path in session
// sid (an owned node's, which the OwnedNode keeps and deletes): end it with
// drop, not Leave.
func newContest(c *Client, parent, path string, sid int64, d *contend.Driver, opts []EnterOption) *Contest {
	cfg := applyEnterOptions(opts)
	_, name := zkpath.SplitPath(path)
	ct := &Contest{
		c: c, parent: parent, path: path, sid: sid, driver: d,
		granted: cfg.granted, verifyOwner: cfg.verifyOwner,
		me:     contend.Contender{Name: name, Key: d.SortKey(name)},
		prefix: protectedPrefixOf(name),
	}
	if c.met != nil {
		since := cfg.since
		if since.IsZero() {
			since = time.Now()
		}
		ct.met = c.met.contest(d, c.Namespace().Strip(parent), since)
	}
	return ct
}

// drop ends a contest made by newContest, leaving its node to its owner.
func (ct *Contest) drop() {
	if ct.done {
		return
	}
	ct.done = true
	ct.met.released()
	if ct.know != nil {
		ct.c.knowledge.leave(ct.know)
		ct.know = nil
	}
}

// applyEnterOptions applies opts to a fresh config. (A config the options
// are applied to moves to the heap: Enter's own stays on the stack.)
func applyEnterOptions(opts []EnterOption) enterConfig {
	var cfg enterConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}

// protectedPrefixOf returns the "_c_<uuid>-" prefix of a protected name,
// or "" when name has none.
func protectedPrefixOf(name string) string {
	uuid, ok := protectedUUID(name)
	if !ok {
		return ""
	}
	return name[:len(zkpath.ProtectedPrefix)+len(uuid)+1]
}

// Path returns the server path of our node.
func (ct *Contest) Path() string { return ct.path }

// Node returns our node's name and sort key.
func (ct *Contest) Node() contend.Contender { return ct.me }

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

// dropGhosts returns kids without the nodes that carry our uuid prefix but
// are not our node, and deletes those: each is a ghost of ours, made by a
// create repeated after a lost reply, that would otherwise block the queue
// (ours included) until our session ends.
func (ct *Contest) dropGhosts(kids []string) []string {
	if ct.prefix == "" {
		return kids
	}
	var out []string // nil until a ghost is found: kids is returned as is
	for i, k := range kids {
		if k == ct.me.Name || !strings.HasPrefix(k, ct.prefix) {
			if out != nil {
				out = append(out, k)
			}
			continue
		}
		if out == nil {
			out = append(make([]string, 0, len(kids)), kids[:i]...)
		}
		ct.c.log.Warn("zkrecipes: deleting a ghost of our own node", "node", zkpath.JoinPath(ct.parent, k), "ours", ct.me.Name)
		_ = ct.c.GuaranteedDelete(context.Background(), zkpath.JoinPath(ct.parent, k), ct.sid)
	}
	if out == nil {
		return kids
	}
	return out
}

// prune drops from *below the contenders known to be gone, and reports
// whether one of them is a contender whose going may have let a node
// appear that the engine has not listed (contend.Driver.Relist): then the caller
// lists the children again, whoever learned of the going (a watch of ours,
// a probe, or another session of this process).
func (ct *Contest) prune(below *[]contend.Contender) (relist bool) {
	cs := *below
	var risky []string
	if ct.driver.Relist != nil { // else none is: no need to look at each
		for _, c := range cs {
			if ct.driver.RelistAfter(c) {
				risky = append(risky, c.Name)
			}
		}
	}
	kept := ct.know.prune(cs) // reuses cs's array
	*below = kept
	if len(risky) == 0 || len(kept) == len(cs) {
		return false
	}
	for _, name := range risky {
		if indexOf(kept, name) < 0 {
			return true
		}
	}
	return false
}

// unknownBlocking counts the contenders of cs that block ours and are not
// known to be gone.
func (ct *Contest) unknownBlocking(cs []contend.Contender) int {
	return ct.know.unknown(cs, ct.driver.Blocks)
}

// confirmOwner checks that our node's ephemeralOwner is the current
// session.
func (ct *Contest) confirmOwner(ctx context.Context, snap Snapshot) error {
	ok, st, err := ct.c.Exists(ctx, ct.path)
	switch {
	case err != nil:
		return err
	case !ok:
		return ct.nodeGone()
	case st.EphemeralOwner != snap.SessionID || st.EphemeralOwner != ct.c.conn.SessionID():
		return fmt.Errorf("%w: %s belongs to session 0x%x, not ours (0x%x)",
			zkerr.ErrSessionLost, ct.path, st.EphemeralOwner, snap.SessionID)
	}
	return nil
}

func indexOf(cs []contend.Contender, name string) int {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Name == name {
			return i
		}
	}
	return -1
}

// nodeGone explains why our node is missing.
func (ct *Contest) nodeGone() error {
	if ct.c.conn.SessionID() != ct.sid {
		return fmt.Errorf("%w: node %s went with its session", zkerr.ErrSessionLost, ct.path)
	}
	return fmt.Errorf("%w: node %s was deleted by someone else", zkerr.ErrLockLost, ct.path)
}

// Leave deletes our node and ends the contest. The delete is guaranteed:
// when the client is not connected, the delete fails for a connection
// reason or ctx ends first, it goes on in the background (see
// GuaranteedDelete), so Leave never blocks on a dead connection. It is
// safe to call more than once.
func (ct *Contest) Leave(ctx context.Context) error {
	if ct == nil || ct.c == nil {
		return fmt.Errorf("%w: Contest not made by Enter", zkerr.ErrInvalidArgument)
	}
	if ct.done {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ct.done = true
	ct.met.released()
	if ct.know != nil {
		// Before the delete: when no other contest in this process uses
		// the incarnation, its record goes now and the delete need not
		// add our name to it.
		ct.c.knowledge.leave(ct.know)
		ct.know = nil
	}
	err := ct.c.GuaranteedDelete(ctx, ct.path, ct.sid)
	if ct.sweep && ct.prefix != "" {
		// A create whose reply was lost may have been applied late, after
		// our search: sweep for copies of our node as we go.
		ct.c.del.sweepProtected(ct.parent, ct.prefix, ct.sid)
	}
	ct.c.sm.untrack(ct.path)
	return err
}

// retryPause is how long an acquisition waits after a transient error
// while the client still reports a connection.
const retryPause = 20 * time.Millisecond
