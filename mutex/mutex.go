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
// lock may acquire it again, and must release it as many times. Release
// by anyone else returns ErrNotOwner and releases nothing.
//
// To release from another goroutine, use the Lease: Lease.Release releases
// one hold of the lease's owner from any goroutine (a revocation listener,
// a worker finishing the job). To hand the ownership itself between
// goroutines, put an explicit owner in the context with WithOwner and pass
// it to Acquire and Release. Calls that pass the same owner are one holder,
// whichever goroutines make them: a second Acquire while the owner's first is
// still queued waits for it and then counts one more hold on the same
// Lease; if the first fails, the second makes its own attempt.
//
// The goroutine id is read in a few nanoseconds (see
// gid.LookupGoroutineID). Should it ever be unreadable, Acquire,
// TryAcquire and Release without an explicit owner return an error that
// says so rather than make every goroutine the same owner.
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
//
// # ACLs
//
// The lock node and the missing parents of the lock's path get the
// Client's ACLs (recipes.WithACLProvider, asked for each node's server
// path). A client they leave out can neither delete nor write them, and
// its Acquire and TryAcquire fail at once with an error wrapping
// recipes.ErrNoAuth. A peer with rights can still delete a holder's node:
// fence the writes the lock guards (Lease.Fenced). See docs/security.md.
package mutex

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/gid"
	"github.com/zkrecipes/zkrecipes/internal/lockspec"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
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
// to release the lock, with lease.Release: fn's goroutine is not the owner,
// so Mutex.Release there would return ErrNotOwner (unless the lock was
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
	driver   *contend.Driver
	lockName string
	kind     string // names it in errors: "mutex", or the rwlock's "rwlock ... write lock"
	prepare  func(owner any) ([]engine.EnterOption, error)

	mu      sync.Mutex
	holds   map[any]*Lease
	pending map[any]*attempt // acquisitions in flight, by owner
	local   localState       // WithLocalHandoff; guarded by mu
}

// attempt is an owner's acquisition in flight. Other calls by the same
// owner wait for it rather than queue a node of their own.
type attempt struct {
	wait bool          // an Acquire, which may wait for another holder; not a TryAcquire
	done chan struct{} // closed when the attempt ends, won or not
}

// New returns a mutex at path. It does not touch ZooKeeper.
func New(c *recipes.Client, path string, opts ...Option) (*Mutex, error) {
	m, err := newMutex(c, path, opts)
	if err != nil {
		return nil, err
	}
	m.lockName = LockName
	m.driver = &contend.Driver{Names: append([]string{LockName}, m.opts.extra...), Recipe: "mutex"}
	return m, nil
}

func init() {
	lockspec.NewMutex = func(c *recipes.Client, path string, spec lockspec.Spec, opts []any) (any, error) {
		mopts := make([]Option, len(opts))
		for i, o := range opts {
			mopts[i], _ = o.(Option)
		}
		return newInternal(c, path, spec, mopts)
	}
	lockspec.HeldBy = func(m any, owner any) (string, bool) {
		if l := m.(*Mutex).leaseOf(owner); l != nil {
			return l.hold.Path(), true
		}
		return "", false
	}
}

// newInternal returns a Mutex at path that follows spec's rules. Options
// apply as for New, except WithExtraLockNames (the driver decides).
func newInternal(c *recipes.Client, path string, spec lockspec.Spec, opts []Option) (*Mutex, error) {
	if spec.LockName == "" || spec.Driver == nil {
		return nil, fmt.Errorf("%w: an internal lock needs a lock name and a driver", recipes.ErrInvalidArgument)
	}
	m, err := newMutex(c, path, opts)
	if err != nil {
		return nil, err
	}
	m.lockName, m.driver, m.prepare, m.kind = spec.LockName, spec.Driver, spec.Prepare, spec.Kind
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
		o.data = []byte(recipeargs.LocalIP())
	}
	return &Mutex{c: c, e: (*engine.Client)(c), path: path, full: full, opts: o, holds: map[any]*Lease{}}, nil
}

// leaseOf returns the Lease held by owner, or nil.
func (m *Mutex) leaseOf(owner any) *Lease {
	if m == nil || owner == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds[owner]
}

// what names the lock in errors: the recipe and its path.
func (m *Mutex) what() string {
	if m.kind != "" {
		return fmt.Sprintf(m.kind, m.path)
	}
	return "mutex " + m.path
}

// Path returns the lock path as given to New.
func (m *Mutex) Path() string { return m.path }

// ownerKey types keep explicit owners apart from goroutine ids.
type (
	ownerCtxKey struct{}
	goroutine   uint64
	explicit    struct{ v any }
)

// WithOwner returns a context that names owner as the owner for Acquire,
// TryAcquire, Release and IsHeld, instead of the calling goroutine. owner must
// be comparable (a string, a pointer, an id...). Calls naming the same
// owner are one holder, in whatever goroutines they run: use it to hand a
// lock between goroutines, or when the goroutine id cannot be read. To
// merely release from another goroutine,
// Lease.Release is enough.
func WithOwner(ctx context.Context, owner any) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, ownerCtxKey{}, explicit{owner})
}

// goroutineID reads the default owner; tests replace it.
var goroutineID = gid.LookupGoroutineID

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
	if err := m.e.Check(); err != nil {
		return m.errorf("%w", err)
	}
	return nil
}

// errorf names the Mutex in an error, once (zkerr.Named).
func (m *Mutex) errorf(format string, args ...any) error {
	return zkerr.Named(m.what(), fmt.Errorf(format, args...))
}
