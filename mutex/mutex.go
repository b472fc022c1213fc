// Package mutex is a Curator-compatible inter-process mutex on ZooKeeper:
// reentrant, fair (first come, first served) and herd-free, with fencing
// tokens and session-loss signals.
//
// A Mutex creates the znodes Curator's InterProcessMutex creates
// (ephemeral-sequential _c_<uuid>-lock-<seq> under container parents), so Go
// and Java processes can contend for the same path safely.
//
// # Owners
//
// Reentrancy is counted per owner. The default owner is the calling
// goroutine, as Curator's is the calling thread: a goroutine that holds the
// lock may lock it again, and must unlock it as many times. Unlock by
// anyone else returns ErrNotOwner and releases nothing.
//
// To release from another goroutine, use the Lease: Lease.Unlock releases
// one hold of the lease's owner from any goroutine (a revocation listener,
// a worker finishing the job). To hand the ownership itself between
// goroutines, put an explicit owner in the context with WithOwner and pass
// it to Lock and Unlock. Calls that pass the same owner are one holder,
// whichever goroutines make them: a second Lock while the owner's first is
// still queued waits for it and then counts one more hold on the same
// Lease; if the first fails, the second makes its own attempt.
//
// The goroutine id is read in a few nanoseconds (see
// engine.LookupGoroutineID). Should it ever be unreadable, Lock, TryLock
// and Unlock without an explicit owner return an error wrapping
// ErrNoGoroutineID rather than make every goroutine the same owner.
//
// # Losing the lock
//
// A hold is only as good as the session behind it. Lease.Done closes when
// the hold may be gone: on LOST, and also on SUSPENDED under the client's
// default (Standard) error policy. Lease.Token gives a fencing token that
// strictly increases across successive holders, and Lease.Fenced makes
// ZooKeeper writes conditional on the lock node still existing.
//
// # What it does not guarantee
//
// That a holder still holds when its code next runs: a process paused past
// its session timeout resumes inside its critical section after another
// holder took the lock, and learns so only when its Client runs again. Guard
// the resource with the token (Lease.Token, or Lease.Fenced for ZooKeeper
// writes); see the recipes package doc. A holder that crashes keeps the lock
// until its session expires (one session timeout). Order is first come,
// first served by ZooKeeper's sequence numbers, across processes; a waiter
// whose session is lost queues again at the back, and WithLocalHandoff lets
// the goroutines of one process go first up to its bound. Reentrancy is per
// owner, not per process: two goroutines of one process are two holders
// that exclude each other.
//
// # Hand-off cost
//
// A waiter lists the lock's children once, when it queues, and then
// watches only the contender just ahead of it (one release wakes one
// waiter). When that one goes, the waiter drops from its own snapshot every
// contender known to be gone, since contenders below it can only disappear:
// the process records the names of the lock nodes its sessions deleted or
// saw deleted. If none is left, it holds the lock without another request;
// if one of unknown fate is left, it probes it; if several are left (their
// owners live in other processes), one children list settles it, as
// Curator does on every wake-up. A queue drained within one process thus
// hands off without listing the children again, however long it is.
package mutex

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// LockName is the lock name in Curator's InterProcessMutex node names.
const LockName = "lock-"

// KazooLockName is the lock name in Kazoo's Lock node names; pass it to
// WithExtraLockNames to share a queue with Kazoo clients.
const KazooLockName = "__lock__"

// RevokeMessage is the data that asks a holder to release (Curator's
// revocation protocol).
const RevokeMessage = "__REVOKE__"

// Sentinel errors of this package are those of package recipes.
var (
	ErrNotOwner    = recipes.ErrNotOwner
	ErrNotHeld     = recipes.ErrNotHeld
	ErrLockLost    = recipes.ErrLockLost
	ErrNotAcquired = recipes.ErrNotAcquired
	ErrFenced      = recipes.ErrFenced
	// ErrNotConnected: TryLock while the client has no connection.
	ErrNotConnected = recipes.ErrNotConnected
	// ErrNoGoroutineID: the calling goroutine's id, the default owner,
	// could not be read; name an explicit owner with WithOwner.
	ErrNoGoroutineID = recipes.ErrNoGoroutineID
)

// Option configures a Mutex.
type Option func(*options) error

type options struct {
	data     []byte
	extra    []string
	onRevoke func(*Lease)
	local    int // WithLocalHandoff bound; 0: off
}

// WithData sets the data of the lock node. The default, as in Curator, is
// this host's IP address as text.
func WithData(data []byte) Option {
	return func(o *options) error {
		o.data = append([]byte(nil), data...)
		return nil
	}
}

// WithExtraLockNames makes other clients' nodes count as contenders in the
// right order: a node's sort key is the text after the last occurrence of
// "lock-" or, failing that, of one of names. Use KazooLockName to share a
// queue with Kazoo (whose clients must in turn list "-lock-" in their
// extra_lock_patterns). Curator does not recognise Kazoo's nodes, so do not
// mix Kazoo and Curator clients on one path.
func WithExtraLockNames(names ...string) Option {
	return func(o *options) error {
		for _, n := range names {
			if n == "" {
				return fmt.Errorf("%w: empty lock name", recipes.ErrInvalidArgument)
			}
		}
		o.extra = append(o.extra, names...)
		return nil
	}
}

// WithRevocationListener makes holds revocable, as Curator's makeRevocable:
// when someone writes RevokeMessage into a held lock node (see Revoke), fn
// is called once, on a goroutine of its own, with the lease. It is up to fn
// to release the lock, with lease.Unlock: fn's goroutine is not the owner,
// so Mutex.Unlock there would return ErrNotOwner (unless the lock was
// taken with an explicit owner that fn names too).
func WithRevocationListener(fn func(*Lease)) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil revocation listener", recipes.ErrInvalidArgument)
		}
		o.onRevoke = fn
		return nil
	}
}

// Mutex is a reentrant inter-process mutex at one path. Many goroutines may
// share one Mutex; each owner (goroutine, or explicit owner) holds it in
// turn with every other owner, in this process or any other.
type Mutex struct {
	c        *recipes.Client
	e        *engine.Client
	path     string // as given
	full     string // on the server
	opts     options
	driver   engine.Driver
	lockName string
	prepare  func(owner any) ([]engine.EnterOption, error)

	mu      sync.Mutex
	holds   map[any]*Lease
	pending map[any]*attempt // acquisitions in flight, by owner
	local   localState       // WithLocalHandoff; guarded by mu
}

// attempt is an owner's acquisition in flight. Other calls by the same
// owner wait for it rather than queue a node of their own.
type attempt struct {
	wait bool          // a Lock, which may wait for another holder; not a TryLock
	done chan struct{} // closed when the attempt ends, won or not
}

// New returns a mutex at path. It does not touch ZooKeeper.
func New(c *recipes.Client, path string, opts ...Option) (*Mutex, error) {
	m, err := newMutex(c, path, opts)
	if err != nil {
		return nil, err
	}
	m.lockName = LockName
	m.driver = &engine.StandardDriver{LockName: LockName, Extra: m.opts.extra, MaxLeases: 1}
	return m, nil
}

// Internal describes a lock that is a Mutex with other node names and
// rules, as Curator builds its read/write lock's two locks on
// InterProcessMutex (InternalInterProcessMutex). Recipes use it; most
// users want New.
type Internal struct {
	// LockName is the name in the lock's node names (_c_<uuid>-<LockName><seq>).
	LockName string
	// Driver decides who holds; its Check sees the owner asking as
	// Query.Owner (compare it with Mutex.LeaseOf).
	Driver engine.Driver
	// Prepare, if set, is called with the owner before it queues a new
	// node (not when it re-enters a hold): it may refuse with an error or
	// add options to the node's creation.
	Prepare func(owner any) ([]engine.EnterOption, error)
}

// NewInternal returns a Mutex at path that follows in's rules. Options
// apply as for New, except WithExtraLockNames (the driver decides).
func NewInternal(c *recipes.Client, path string, in Internal, opts ...Option) (*Mutex, error) {
	if in.LockName == "" || in.Driver == nil {
		return nil, fmt.Errorf("%w: an internal lock needs a lock name and a driver", recipes.ErrInvalidArgument)
	}
	m, err := newMutex(c, path, opts)
	if err != nil {
		return nil, err
	}
	m.lockName, m.driver, m.prepare = in.LockName, in.Driver, in.Prepare
	return m, nil
}

func newMutex(c *recipes.Client, path string, opts []Option) (*Mutex, error) {
	full, err := recipeargs.Path(c, path, "a lock path")
	if err != nil {
		return nil, err
	}
	var o options
	if err := recipeargs.Options(&o, opts); err != nil {
		return nil, err
	}
	if o.data == nil {
		o.data = []byte(localIP())
	}
	return &Mutex{c: c, e: engine.Of(c), path: path, full: full, opts: o, holds: map[any]*Lease{}}, nil
}

// LeaseOf returns the Lease held by owner, as a driver sees it in
// Query.Owner, or nil.
func (m *Mutex) LeaseOf(owner any) *Lease {
	if m == nil || owner == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds[owner]
}

// Client returns the client the mutex was made with.
func (m *Mutex) Client() *recipes.Client { return m.c }

// Path returns the lock path as given to New.
func (m *Mutex) Path() string { return m.path }

// Lease is one owner's hold on a Mutex. Locking again by the same owner
// returns the same Lease. Its Unlock releases a hold from any goroutine.
type Lease struct {
	hold  *engine.Hold
	m     *Mutex
	ct    *engine.Contest
	sig   engine.Signals
	owner any
	count int // guarded by m.mu

	proc *procHold // WithLocalHandoff: the process's hold this lease is part of
	seq  uint64    // its place among the process hold's local holders (0: the first)
}

// Node returns the server path of the lease's node.
func (l *Lease) Node() string { return l.hold.Node() }

// Done returns a channel that closes when the lease may be gone: on LOST,
// on SUSPENDED under the client's Standard error policy, when the client
// closes, and when the lease is fully released.
func (l *Lease) Done() <-chan struct{} { return l.hold.Done() }

// IsLost reports whether the session that owned the lease was lost (or
// the client closed) since it began.
func (l *Lease) IsLost() bool { return l.hold.IsLost() }

// Token returns the lease's fencing token: the creation zxid (czxid) of
// its node. Tokens strictly increase across successive holders of the same
// path, even when the parent was deleted and recreated in between. The
// first call reads the node (one request); later calls return the cached
// value.
func (l *Lease) Token(ctx context.Context) (int64, error) { return l.hold.Token(ctx) }

// Fenced runs ops (*zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest
// or *zk.CheckVersionRequest, with server paths) as one transaction
// together with a check that the lease's node still exists, so the server
// refuses the writes of a holder that lost it: the error then wraps
// ErrFenced, as it does once the lease is fully released. The responses returned are for ops
// only. A connection error is returned as it is (recipes.IsRetryable): the
// transaction may or may not have been applied.
func (l *Lease) Fenced(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return l.hold.Fenced(ctx, ops...)
}

// Count returns how many times the owner holds the lock through this
// Lease: 0 once it is released.
func (l *Lease) Count() int {
	if l == nil || l.m == nil {
		return 0
	}
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	return l.count
}

// Unlock releases one hold of the lease's owner, from any goroutine,
// exactly as the owner's Mutex.Unlock would: the last one deletes the lock
// node, and if the session was lost while the lock was held it drops the
// whole hold and returns an error wrapping ErrLockLost. Once the lease is
// fully released, Unlock returns ErrNotHeld and releases nothing, even if
// the owner has locked again since (under a new Lease).
func (l *Lease) Unlock(ctx context.Context) error {
	if l == nil || l.m == nil {
		return fmt.Errorf("%w: Lease not returned by Lock", recipes.ErrInvalidArgument)
	}
	if err := l.m.check(ctx); err != nil {
		return err
	}
	l.m.mu.Lock()
	return l.m.release(ctx, l)
}

// ownerKey types keep explicit owners apart from goroutine ids.
type (
	ownerCtxKey struct{}
	goroutine   uint64
	explicit    struct{ v any }
)

// WithOwner returns a context that names owner as the owner for Lock,
// TryLock, Unlock and IsHeld, instead of the calling goroutine. owner must
// be comparable (a string, a pointer, an id...). Calls naming the same
// owner are one holder, in whatever goroutines they run: use it to hand a
// lock between goroutines, or when the goroutine id cannot be read
// (ErrNoGoroutineID). To merely release from another goroutine,
// Lease.Unlock is enough.
func WithOwner(ctx context.Context, owner any) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, ownerCtxKey{}, explicit{owner})
}

// goroutineID reads the default owner; tests replace it.
var goroutineID = engine.LookupGoroutineID

func ownerOf(ctx context.Context) (any, error) {
	if o, ok := ctx.Value(ownerCtxKey{}).(explicit); ok { // no goroutine id needed
		if o.v == nil || !reflect.ValueOf(o.v).Comparable() {
			return nil, fmt.Errorf("%w: owner %T is not comparable", recipes.ErrInvalidArgument, o.v)
		}
		return o, nil
	}
	id, err := goroutineID()
	if err != nil { // never fall back to a shared owner
		return nil, fmt.Errorf("%w (see mutex.WithOwner)", err)
	}
	return goroutine(id), nil
}

func (m *Mutex) check(ctx context.Context) error {
	if m == nil || m.c == nil {
		return fmt.Errorf("%w: Mutex not made by New", recipes.ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	return m.e.Check()
}

// Lock blocks until the owner holds the lock, ctx ends, or the session is
// lost. A timed acquire is a ctx with a deadline. When ctx ends the
// caller's node is removed and the error wraps ctx.Err(). If the owner
// already holds the lock, Lock counts one more hold and returns at once.
// If the owner's acquisition is in flight in another goroutine (an
// explicit owner), Lock waits for it, within ctx, and then counts one more
// hold on the Lease it won; if that attempt fails, Lock makes its own.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) { return m.lock(ctx, true) }

// TryLock makes one attempt and never waits for another holder: it returns
// the lease, or an error wrapping ErrNotAcquired when someone else holds
// the lock (leaving no node behind), or ErrNotConnected when the client
// has no connection to a server. If the owner already holds the lock,
// TryLock counts one more hold. If the owner's acquisition is in flight in
// another goroutine: a TryLock in flight makes one attempt too, so TryLock
// waits for its outcome (within ctx) and counts one more hold if it won,
// or makes its own attempt if it did not; a Lock in flight may be queued
// behind another holder, so TryLock returns ErrNotAcquired at once.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) { return m.lock(ctx, false) }

func (m *Mutex) lock(ctx context.Context, wait bool) (*Lease, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, fmt.Errorf("mutex %s: %w", m.path, err)
	}
	a, l, err := m.join(ctx, owner, wait)
	if a == nil {
		return l, err
	}
	l, err = m.acquire(ctx, owner, wait)
	m.mu.Lock()
	delete(m.pending, owner)
	if l != nil {
		m.holds[owner] = l
	}
	close(a.done) // waiters look again: they re-enter l, or try themselves
	m.mu.Unlock()
	if l != nil && m.opts.onRevoke != nil {
		go l.watchRevocation()
	}
	return l, err
}

// join settles a lock call against the owner's state in this Mutex: it
// re-enters the owner's hold (returning the Lease), or waits for the
// owner's acquisition in flight and looks again, or registers a new
// attempt and returns it for the caller to make.
func (m *Mutex) join(ctx context.Context, owner any, wait bool) (*attempt, *Lease, error) {
	m.mu.Lock()
	for {
		if l := m.holds[owner]; l != nil {
			defer m.mu.Unlock()
			if l.IsLost() {
				return nil, nil, fmt.Errorf("mutex %s: %w: unlock it first", m.path, ErrLockLost)
			}
			l.count++
			return nil, l, nil
		}
		a := m.pending[owner]
		if a == nil {
			break
		}
		m.mu.Unlock()
		if !wait && a.wait {
			return nil, nil, fmt.Errorf("mutex %s: %w: the owner's Lock is still waiting", m.path, ErrNotAcquired)
		}
		select {
		case <-a.done:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("mutex %s: waiting for the owner's acquisition in flight: %w", m.path, ctx.Err())
		}
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	a := &attempt{wait: wait, done: make(chan struct{})}
	if m.pending == nil {
		m.pending = map[any]*attempt{}
	}
	m.pending[owner] = a
	return a, nil, nil
}

// acquire queues a node and waits (or, with wait false, checks once) until
// it holds the lock.
func (m *Mutex) acquire(ctx context.Context, owner any, wait bool) (*Lease, error) {
	if m.opts.local > 0 {
		return m.acquireLocal(ctx, owner, wait)
	}
	return m.acquireNode(ctx, owner, wait)
}

// acquireNode queues a node of the owner's in the ZooKeeper queue.
func (m *Mutex) acquireNode(ctx context.Context, owner any, wait bool) (*Lease, error) {
	if !wait && !m.c.State().IsConnected() {
		// One attempt cannot succeed without a server: say so at once
		// instead of retrying the create until ctx ends.
		return nil, fmt.Errorf("mutex %s: %w (%v)", m.path, recipes.ErrNotConnected, m.c.State())
	}
	var eopts []engine.EnterOption
	if m.prepare != nil {
		var err error
		if eopts, err = m.prepare(owner); err != nil {
			return nil, fmt.Errorf("mutex %s: %w", m.path, err)
		}
	}
	ct, err := m.e.Enter(ctx, m.full, m.lockName, m.opts.data, m.driver, eopts...)
	if err != nil {
		return nil, fmt.Errorf("mutex %s: %w", m.path, err)
	}
	held, sig, err := ct.Acquire(ctx, wait)
	if err != nil {
		return nil, fmt.Errorf("mutex %s: %w", m.path, err)
	}
	if !held {
		return nil, fmt.Errorf("mutex %s: %w", m.path, ErrNotAcquired)
	}
	return &Lease{hold: engine.NewHold(m.e, ct.Path(), sig), m: m, ct: ct, sig: sig, owner: owner, count: 1}, nil
}

// Unlock releases one hold of the owner; the last one deletes the lock node
// (retrying in the background through connection problems). Unlock by an
// owner that does not hold the lock returns ErrNotOwner (someone else
// holds it here) or ErrNotHeld and releases nothing. If the session was
// lost while the lock was held, Unlock drops the whole hold, cleans up and
// returns an error wrapping ErrLockLost: the lock may have been someone
// else's for a while. Lease.Unlock does the same from any goroutine.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return fmt.Errorf("mutex %s: %w", m.path, err)
	}
	m.mu.Lock()
	l := m.holds[owner]
	if l == nil {
		others := len(m.holds)
		m.mu.Unlock()
		if others > 0 {
			return fmt.Errorf("mutex %s: %w", m.path, ErrNotOwner)
		}
		return fmt.Errorf("mutex %s: %w", m.path, ErrNotHeld)
	}
	return m.release(ctx, l)
}

// release releases one hold of l, for Mutex.Unlock and Lease.Unlock alike.
// m.mu is held on entry; release unlocks it.
func (m *Mutex) release(ctx context.Context, l *Lease) error {
	if l.count == 0 {
		m.mu.Unlock()
		return fmt.Errorf("mutex %s: %w: the lease was released", m.path, ErrNotHeld)
	}
	lost := l.IsLost()
	if l.count--; l.count > 0 && !lost {
		m.mu.Unlock()
		return nil
	}
	l.count = 0
	if m.holds[l.owner] == l {
		delete(m.holds, l.owner)
	}
	if l.proc != nil && m.handOnLocked(l, lost) {
		m.mu.Unlock()
		l.hold.MarkReleased() // the node stays: a goroutine of this process holds it now
		return nil
	}
	m.mu.Unlock()

	l.hold.MarkReleased()
	err := l.ct.Leave(ctx)
	if lost {
		return fmt.Errorf("mutex %s: %w", m.path, ErrLockLost)
	}
	if err != nil {
		return fmt.Errorf("mutex %s: %w", m.path, err)
	}
	return nil
}

// Acquire is Lock without the lease, under Curator's name; with Release it
// makes Mutex a Locker.
func (m *Mutex) Acquire(ctx context.Context) error {
	_, err := m.Lock(ctx)
	return err
}

// Release is Unlock under Curator's name.
func (m *Mutex) Release(ctx context.Context) error { return m.Unlock(ctx) }

// IsHeld reports whether the owner named by ctx (or the calling goroutine)
// holds the lock.
func (m *Mutex) IsHeld(ctx context.Context) bool {
	if m.check(ctx) != nil {
		return false
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds[owner] != nil
}

// IsHeldInProcess reports whether any owner in this process holds the lock
// through this Mutex (Curator's isAcquiredInThisProcess).
func (m *Mutex) IsHeldInProcess() bool {
	if m == nil || m.c == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.holds) > 0
}

// Participant is one contender in the queue.
type Participant struct {
	Name string // node name
	Path string // server path
}

// Participants returns the contenders for the lock in queue order: the
// first holds it. Nodes of other clients with a recognised lock name are
// included, as Curator includes them.
func (m *Mutex) Participants(ctx context.Context) ([]Participant, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	var kids []string
	err := m.c.Retry(ctx, func() error {
		var err error
		kids, _, err = m.c.Children(m.full)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mutex %s: participants: %w", m.path, err)
	}
	sorted := engine.SortContenders(kids, m.driver)
	out := make([]Participant, len(sorted))
	for i, s := range sorted {
		out[i] = Participant{Name: s.Name, Path: engine.JoinPath(m.full, s.Name)}
	}
	return out, nil
}

// Holder returns the node of the current holder and its data (by default
// the holder's IP address). It returns ErrNotHeld when nobody holds the
// lock.
func (m *Mutex) Holder(ctx context.Context) (Participant, []byte, error) {
	for {
		ps, err := m.Participants(ctx)
		if err != nil {
			return Participant{}, nil, err
		}
		if len(ps) == 0 {
			return Participant{}, nil, fmt.Errorf("mutex %s: %w", m.path, ErrNotHeld)
		}
		var data []byte
		err = m.c.Retry(ctx, func() error {
			var err error
			data, _, err = m.c.Get(ps[0].Path)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // released meanwhile: look again
		}
		if err != nil {
			return Participant{}, nil, fmt.Errorf("mutex %s: holder: %w", m.path, err)
		}
		return ps[0], data, nil
	}
}

// Revoke asks the holder of the lock node at nodePath (a server path, see
// Participants) to release it, by writing RevokeMessage into the node.
// Holders that registered a revocation listener are told.
func Revoke(ctx context.Context, c *recipes.Client, nodePath string) error {
	if err := recipeargs.Client(c); err != nil {
		return err
	}
	if err := recipes.ValidatePath(nodePath); err != nil {
		return err
	}
	if nodePath == "/" {
		return fmt.Errorf("%w: the root is not a lock node", recipes.ErrInvalidPath)
	}
	err := c.Retry(ctx, func() error {
		_, err := c.Set(nodePath, []byte(RevokeMessage), -1)
		return err
	})
	if err != nil {
		return fmt.Errorf("mutex: revoke %s: %w", nodePath, err)
	}
	return nil
}

// watchRevocation waits for RevokeMessage in our node's data. It ends when
// the node is deleted (release) or the watch ends with the session.
func (l *Lease) watchRevocation() {
	c := l.m.e
	for {
		data, _, ch, err := c.GetW(l.Node())
		if err != nil {
			if !recipes.IsRetryable(err) {
				return
			}
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-l.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		if string(data) == RevokeMessage {
			l.m.opts.onRevoke(l)
			return
		}
		ev := <-ch
		if ev.Type != zk.EventNodeDataChanged {
			return
		}
	}
}

var (
	localIPOnce sync.Once
	localIPText string
)

// localIP returns this host's first non-loopback IPv4 address as text
// (Curator stores the local address in lock nodes), else "127.0.0.1".
func localIP() string {
	localIPOnce.Do(func() {
		localIPText = "127.0.0.1"
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				localIPText = ipn.IP.String()
				return
			}
		}
	})
	return localIPText
}
