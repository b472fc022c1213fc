// Package rwlock is a Curator-compatible inter-process read/write lock on
// ZooKeeper (Curator's InterProcessReadWriteLock): many readers or one
// writer, fair (first come, first served), writer-fair (a queued writer
// holds back the readers that queue after it) and herd-free, with fencing
// tokens and session-loss signals.
//
// Both locks queue under one path, with the nodes Curator makes:
// _c_<uuid>-__READ__<seq> and _c_<uuid>-__WRIT__<seq>, ephemeral
// sequential, ordered by the text after the last __READ__ or __WRIT__.
// A writer holds when its node is first; a reader holds when no writer's
// node is ahead of it. Each lock is a mutex.Mutex with these rules (as
// Curator builds both on InterProcessMutex), so it has the mutex's whole
// API: Acquire, TryAcquire, Release, Lease.Release from any goroutine,
// reentrancy per owner (the calling goroutine, or mutex.WithOwner),
// Lease.Done, Token and Fenced, AcquireHold (a mutex.Locker, for
// MultiLock).
//
// # Downgrade and upgrade
//
// The write lock's owner may take the read lock at once, and then release
// the write lock and go on reading: a downgrade. Its read node is
// _c_<uuid>-__READ__<the write node's sequence>, ephemeral but not
// sequential, so it sorts where the write node is and every writer queued
// behind the write lock (in this process, another, or a Curator client)
// keeps waiting until the reader releases. (Curator 5.4 makes an ordinary
// sequential read node instead, which lets a queued writer in as soon as
// the write lock is released, while the downgraded reader still reads:
// CURATOR-621, fixed after 5.4.0 the way this package does it.)
//
// The other way round, a reader asking for the write lock would wait for
// itself forever (it does in Curator); here Acquire and TryAcquire return
// an error wrapping recipes.ErrUpgrade at once.
//
// # What it does not guarantee
//
// The mutex's limits hold here too (see package mutex): a reader or writer
// paused past its session timeout may resume after the lock went to
// someone else, so guard what it protects with the token or Fenced. A
// reader's token is its own node's czxid and says nothing about other
// readers holding at the same time: fence writes with the write lock's
// token. A Curator 5.4 client downgrading does not keep Go writers out
// (CURATOR-621, above); a reader cannot become a writer without releasing.
//
// # Wake-ups
//
// A writer watches the node just ahead of it. A waiting reader watches the
// nearest writer ahead of it (Curator's reader watches the first one; the
// rule for holding is the same), so a writer's release wakes only the
// readers queued between it and the next writer, and that writer.
//
// # ACLs
//
// The read and write nodes (the downgrade node too) and the missing
// parents get the Client's ACLs (recipes.WithACLProvider); a client they
// leave out fails at once with an error wrapping recipes.ErrNoAuth. See
// docs/security.md.
package rwlock

import (
	"context"
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/lockspec"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Node names, as Curator's InterProcessReadWriteLock names them.
const (
	ReadLockName  = "__READ__"
	WriteLockName = "__WRIT__"
)

// RWLock is a read/write lock at one path.
type RWLock struct {
	c     *recipes.Client
	path  string
	full  string
	read  *mutex.Mutex
	write *mutex.Mutex
}

// New returns a read/write lock at path. Options are the mutex's
// (mutex.WithData sets the nodes' data; by default, as in Curator, the
// local IP address). It does not touch ZooKeeper.
func New(c *recipes.Client, path string, opts ...mutex.Option) (*RWLock, error) {
	if c == nil {
		return nil, recipes.ErrNilClient
	}
	rw := &RWLock{c: c, path: path}
	anyOpts := make([]any, len(opts))
	for i, o := range opts {
		anyOpts[i] = o
	}
	write, err := lockspec.NewMutex(c, path, lockspec.Spec{
		Kind: "rwlock %s (write lock)", LockName: WriteLockName, Driver: writeDriver, Prepare: rw.prepareWrite,
	}, anyOpts)
	if err != nil {
		return nil, err
	}
	read, err := lockspec.NewMutex(c, path, lockspec.Spec{
		Kind: "rwlock %s (read lock)", LockName: ReadLockName, Driver: readDriver, Prepare: rw.prepareRead,
	}, anyOpts)
	if err != nil {
		return nil, err
	}
	rw.write, rw.read = write.(*mutex.Mutex), read.(*mutex.Mutex)
	rw.full, _ = c.FullPath(path)
	return rw, nil
}

// ReadLock returns the read lock: many owners may hold it at once, while
// no writer holds or waits ahead of them.
func (rw *RWLock) ReadLock() *mutex.Mutex {
	if rw == nil {
		return nil // its methods return ErrInvalidArgument
	}
	return rw.read
}

// WriteLock returns the write lock: one owner holds it, alone.
func (rw *RWLock) WriteLock() *mutex.Mutex {
	if rw == nil {
		return nil // its methods return ErrInvalidArgument
	}
	return rw.write
}

// Path returns the lock path as given to New.
func (rw *RWLock) Path() string { return rw.path }

// prepareWrite refuses an upgrade.
func (rw *RWLock) prepareWrite(owner any) ([]engine.EnterOption, error) {
	if _, ok := lockspec.HeldBy(rw.read, owner); ok {
		return nil, recipes.ErrUpgrade
	}
	return nil, nil
}

// prepareRead decides the downgrade where the node is made: the write
// lock's owner gets a read node at the write node's sequence, so that it
// sorts where the write node is and writers queued behind keep waiting,
// and that node holds at once.
func (rw *RWLock) prepareRead(owner any) ([]engine.EnterOption, error) {
	if node, ok := lockspec.HeldBy(rw.write, owner); ok {
		_, name := zkpath.SplitPath(node)
		seq := contend.SortKey(name, WriteLockName)
		return []engine.EnterOption{engine.EnterAtSequence(seq), engine.EnterGranted()}, nil
	}
	return nil, nil
}

func isWriter(c contend.Contender) bool { return strings.Contains(c.Name, WriteLockName) }

// Both kinds of node sort by the text after the last lock name, as
// Curator's SortingLockInternalsDriver does. A writer that goes may have
// downgraded, leaving a read node at its sequence that was not listed:
// its going calls for a new list (Relist).
var (
	// writeDriver: a writer holds when its node is first, and watches the
	// node just ahead of it.
	writeDriver = &contend.Driver{Names: []string{ReadLockName, WriteLockName}, Relist: isWriter, Recipe: "rwlock_write"}
	// readDriver: a reader holds when no writer is ahead of it, and
	// otherwise watches the nearest writer ahead. Readers do not block
	// readers.
	readDriver = &contend.Driver{Names: []string{ReadLockName, WriteLockName}, Blocks: isWriter, Relist: isWriter, Recipe: "rwlock_read"}
)

// Participants returns every node of the lock, readers and writers, in
// queue order: Curator's order, in which each of its locks'
// getParticipantNodes lists its own kind of node. A downgrade node shares
// its sort key with the write node it was made beside; ties are ordered by
// name here, by the server's child order in Curator. Writer marks the
// write lock's nodes; Holds, those that hold (a writer first in the queue,
// a reader with no writer ahead).
func (rw *RWLock) Participants(ctx context.Context) ([]recipes.Participant, error) {
	if rw == nil || rw.c == nil {
		return nil, fmt.Errorf("%w: RWLock not made by New", recipes.ErrInvalidArgument)
	}
	if err := (*engine.Client)(rw.c).Check(); err != nil {
		return nil, zkerr.Named("rwlock "+rw.path, err)
	}
	ms, err := (*engine.Client)(rw.c).ReadQueue(ctx, rw.full, writeDriver, func(c contend.Contender) bool {
		return strings.Contains(c.Name, ReadLockName) || strings.Contains(c.Name, WriteLockName)
	})
	if err != nil {
		return nil, zkerr.Namedf("rwlock "+rw.path, "participants: %w", err)
	}
	below := make([]contend.Contender, 0, len(ms))
	for i := range ms { // a reader holds by the read lock's rule
		if !isWriter(ms[i].Contender) {
			ms[i].Holds = readDriver.Decide(below).Held
		}
		below = append(below, ms[i].Contender)
	}
	return recipeargs.Participants(ms, isWriter), nil
}
