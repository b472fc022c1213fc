package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Contender is one node in a contender queue.
type Contender struct {
	Name string // the node's name under the recipe path
	Key  string // what contenders are ordered by
}

// Query is what a Driver decides on: our contender, the contenders
// ordered ahead of it, and who is asking.
type Query struct {
	// Below holds, lowest first, every contender ahead of ours that may
	// still exist, and possibly some that are already gone.
	Below []Contender
	// Ours is our contender.
	Ours Contender
	// Owner is the owner the contest was entered for (EnterOwner), or nil.
	// A driver may grant at once to an owner that already holds a related
	// lock in this process (a read lock asked for by the write lock's
	// owner).
	Owner any
}

// Verdict is a Driver's answer: held, or else the contender to wait for.
type Verdict struct {
	Held bool
	// Watch is, when not Held, the contender of Query.Below whose deletion
	// may change the answer. The engine watches it.
	Watch Contender
}

// Driver tells the contender engine the rules of one lock-like recipe, as
// Curator's LockInternalsDriver does.
type Driver interface {
	// SortKey returns the text a child node is ordered by.
	SortKey(child string) string
	// Check decides whether our contender holds. Since Query.Below may
	// still list contenders that are gone, Check must only answer Held
	// when removing any of them could not change that answer (true of
	// every Curator driver).
	Check(q Query) Verdict
	// Blocks reports whether other, ordered ahead of ours, can keep ours
	// from holding (a reader does not block a reader). Only contenders
	// that block count when the engine decides whether to list the
	// children again or to probe the one contender left.
	Blocks(ours, other Contender) bool
	// Relist reports whether the deletion of gone may have let a contender
	// appear ahead of ours that the engine has not listed (a write lock
	// downgraded to a read node with the same sequence number, say). The
	// engine then lists the children again instead of walking its
	// snapshot.
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
func (d *StandardDriver) Check(q Query) Verdict {
	n := d.MaxLeases
	if n < 1 {
		n = 1
	}
	ours := len(q.Below)
	if ours < n {
		return Verdict{Held: true}
	}
	return Verdict{Watch: q.Below[ours-n]}
}

// Blocks is true: every contender ahead counts.
func (d *StandardDriver) Blocks(_, _ Contender) bool { return true }

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
	slices.SortFunc(out, compareContenders) // sort.Slice would allocate
	return out
}

func compareContenders(a, b Contender) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

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
	me          Contender
	prefix      string // _c_<uuid>- of our node
	sid         int64
	driver      Driver
	owner       any
	verifyOwner bool
	sweep       bool // a create reply was lost: a late copy may still land
	know        *parentKnowledge
	done        bool
}

// EnterOption configures Enter.
type EnterOption func(*enterConfig)

type enterConfig struct {
	owner       any
	fixed       string
	hasFixed    bool
	verifyOwner bool
}

// EnterOwner names who is asking; the driver sees it as Query.Owner.
func EnterOwner(owner any) EnterOption {
	return func(e *enterConfig) { e.owner = owner }
}

// EnterAtSequence makes the node ephemeral but not sequential, named
// _c_<uuid>-<lockName><seq>: it sorts where a sequential node with that
// sequence suffix sorts (the read/write lock's downgrade node takes the
// write node's sequence). seq must be ten digits, as the server writes
// them; Enter refuses anything else with ErrInvalidArgument.
func EnterAtSequence(seq string) EnterOption {
	return func(e *enterConfig) { e.fixed, e.hasFixed = seq, true }
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
func (c *Client) Enter(ctx context.Context, parent, lockName string, data []byte, d Driver, opts ...EnterOption) (*Contest, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("%w: nil driver", ErrInvalidArgument)
	}
	if lockName == "" {
		return nil, fmt.Errorf("%w: empty lock name", ErrInvalidArgument)
	}
	var cfg enterConfig
	if len(opts) > 0 {
		cfg = applyEnterOptions(opts)
		if cfg.hasFixed && !isSequence(cfg.fixed) {
			return nil, fmt.Errorf("%w: sequence %q is not 10 digits", ErrInvalidArgument, cfg.fixed)
		}
	}
	name := lockName
	if cfg.hasFixed {
		name += cfg.fixed
	}
	path, sid, lostReply, err := c.createProtected(ctx, parent, NewUUID(), name, data, !cfg.hasFixed)
	if err != nil {
		return nil, err
	}
	_, name = SplitPath(path)
	c.track(path, sid)
	return &Contest{
		c: c, parent: parent, path: path, sid: sid, driver: d,
		owner: cfg.owner, verifyOwner: cfg.verifyOwner, sweep: lostReply,
		me:     Contender{Name: name, Key: d.SortKey(name)},
		prefix: protectedPrefixOf(name),
	}, nil
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
	return name[:len(ProtectedPrefix)+len(uuid)+1]
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
// the session ended, ErrNotConnected when wait is false and the client is
// not connected, ErrClosed when the client closed).
func (ct *Contest) Acquire(ctx context.Context, wait bool) (held bool, sig Signals, err error) {
	if ct == nil || ct.c == nil {
		return false, Signals{}, fmt.Errorf("%w: Contest not made by Enter", ErrInvalidArgument)
	}
	if ctx == nil {
		_ = ct.Leave(context.Background())
		return false, Signals{}, fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	held, sig, err = ct.acquire(ctx, wait)
	if !held {
		if lerr := ct.Leave(context.WithoutCancel(ctx)); lerr != nil && err == nil {
			err = lerr
		}
	}
	return held, sig, err
}

func (ct *Contest) acquire(ctx context.Context, wait bool) (bool, Signals, error) {
	c := ct.c
	var (
		below   []Contender // contenders ahead of ours that may still exist
		listed  bool
		target  string          // name of the contender we watch
		watchCh <-chan zk.Event // live watch on target
		czxid   int64           // the parent's, as of the last listing
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
				return false, Signals{}, fmt.Errorf("zkrecipes: acquire %s: %w (%v)", ct.path, ErrNotConnected, snap.State)
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
			kids = ct.dropGhosts(kids)
			var sorted []Contender
			ours := -1
			if len(kids) == 1 && kids[0] == ct.me.Name {
				ours = 0 // alone, the uncontended case: nothing to sort
			} else {
				sorted = SortContenders(kids, ct.driver)
				for i, k := range sorted {
					if k.Name == ct.me.Name {
						ours = i
						break
					}
				}
			}
			if ours < 0 {
				return false, Signals{}, ct.nodeGone()
			}
			below, listed, czxid = sorted[:ours:ours], true, pstat.Czxid
			if ct.know == nil && len(below) > 0 {
				ct.know = c.knowledge.enter(ct.parent, czxid)
			}
			target, watchCh = "", nil
		}
		if ct.know != nil && len(below) > 0 {
			if ct.prune(&below) {
				listed = false // a contender known gone may have left an unlisted one
				continue
			}
		}
		v := ct.driver.Check(Query{Below: below, Ours: ct.me, Owner: ct.owner})
		if v.Held {
			if ct.verifyOwner {
				if err := ct.confirmOwner(snap); err != nil {
					if IsRetryable(err) {
						if err := ct.pause(ctx, err); err != nil {
							return false, Signals{}, err
						}
						continue
					}
					return false, Signals{}, err
				}
			}
			if hold := c.HoldSignal(snap); !isClosed(hold) && !isClosed(snap.Changed) {
				if len(below) == 0 {
					if ct.know == nil {
						// Held at the first look, nobody ahead: the
						// record is worth joining only when another
						// contest of this Client already uses it (the
						// watermark can then spare it a list).
						ct.know = c.knowledge.enterIfPresent(ct.parent, czxid)
					}
					if ct.know != nil {
						ct.know.allGoneBelow(ct.me.Key)
					}
				}
				return true, Signals{Done: hold, Lost: snap.Lost}, nil
			}
			continue // the connection blinked while we looked; look again
		}
		if !wait {
			return false, Signals{}, nil
		}
		if ct.know == nil { // about to wait: record what goes
			ct.know = c.knowledge.enter(ct.parent, czxid)
		}
		w := indexOf(below, v.Watch.Name)
		if w < 0 {
			return false, Signals{}, fmt.Errorf("%w: driver %T asked to watch %q, not ahead of %s",
				ErrInvalidArgument, ct.driver, v.Watch.Name, ct.me.Name)
		}
		next := below[w].Name
		if next != target || watchCh == nil {
			_, _, ch, err := c.GetW(JoinPath(ct.parent, next))
			switch {
			case err == nil:
				target, watchCh = next, ch
			case errors.Is(err, zk.ErrNoNode):
				gone := below[w]
				ct.know.gone(gone)
				if ct.driver.Relist(gone) || ct.unknownBlocking(below[:w]) > 0 {
					listed = false // more of unknown fate ahead: list again
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
				if ct.driver.Relist(gone) || ct.unknownBlocking(below[:w]) > 1 {
					// Several blocking contenders ahead of the one that
					// went may still exist: one list is cheaper than
					// probing each.
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
		ct.c.log.Warn("zkrecipes: deleting a ghost of our own node", "node", JoinPath(ct.parent, k), "ours", ct.me.Name)
		_ = ct.c.GuaranteedDelete(context.Background(), JoinPath(ct.parent, k), ct.sid)
	}
	if out == nil {
		return kids
	}
	return out
}

// prune drops from *below the contenders known to be gone, and reports
// whether one of them is a contender whose going may have let a node
// appear that the engine has not listed (Driver.Relist): then the caller
// lists the children again, whoever learned of the going (a watch of ours,
// a probe, or another session of this process).
func (ct *Contest) prune(below *[]Contender) (relist bool) {
	cs := *below
	var risky []string
	for _, c := range cs {
		if ct.driver.Relist(c) {
			risky = append(risky, c.Name)
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
func (ct *Contest) unknownBlocking(cs []Contender) int {
	n := 0
	for _, o := range cs {
		if ct.driver.Blocks(ct.me, o) {
			n++
		}
	}
	if n == 0 {
		return 0
	}
	if n == len(cs) {
		return ct.know.unknown(cs)
	}
	blocking := make([]Contender, 0, n)
	for _, o := range cs {
		if ct.driver.Blocks(ct.me, o) {
			blocking = append(blocking, o)
		}
	}
	return ct.know.unknown(blocking)
}

// confirmOwner checks that our node's ephemeralOwner is the current
// session.
func (ct *Contest) confirmOwner(snap Snapshot) error {
	ok, st, err := ct.c.Exists(ct.path)
	switch {
	case err != nil:
		return err
	case !ok:
		return ct.nodeGone()
	case st.EphemeralOwner != snap.SessionID || st.EphemeralOwner != ct.c.conn.SessionID():
		return fmt.Errorf("%w: %s belongs to session 0x%x, not ours (0x%x)",
			ErrSessionLost, ct.path, st.EphemeralOwner, snap.SessionID)
	}
	return nil
}

func indexOf(cs []Contender, name string) int {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Name == name {
			return i
		}
	}
	return -1
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

// pause handles a failed request: retryable errors wait for a short
// backoff; others end the acquisition.
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

// Leave deletes our node and ends the contest. The delete is guaranteed:
// when the client is not connected, the delete fails for a connection
// reason or ctx ends first, it goes on in the background (see
// GuaranteedDelete), so Leave never blocks on a dead connection. It is
// safe to call more than once.
func (ct *Contest) Leave(ctx context.Context) error {
	if ct == nil || ct.c == nil {
		return fmt.Errorf("%w: Contest not made by Enter", ErrInvalidArgument)
	}
	if ct.done {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ct.done = true
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
		ct.c.cleanupProtected(ct.parent, ct.prefix, ct.sid)
	}
	ct.c.untrack(ct.path)
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
