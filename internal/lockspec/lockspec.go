// Package lockspec lets a recipe build a lock on package mutex with node
// names and rules of its own, as Curator builds its read/write lock's two
// locks on InterProcessMutex (InternalInterProcessMutex), without package
// mutex exporting the means to users.
package lockspec

import (
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Spec is a lock's own rules.
type Spec struct {
	// Kind names the lock in errors, a format with one %s for its path:
	// "rwlock %s (write lock)", say. Empty: "mutex %s".
	Kind string
	// LockName is the name in the lock's node names (_c_<uuid>-<LockName><seq>).
	LockName string
	// Driver decides who holds.
	Driver *contend.Driver
	// Prepare, if set, is called with the owner before it queues a new
	// node (not when it re-enters a hold): it may refuse with an error or
	// add options to the node's creation (EnterAtSequence, EnterGranted).
	Prepare func(owner any) ([]engine.EnterOption, error)
}

// Set by package mutex when it is initialised (the types are mutex's,
// which this package cannot import).
var (
	// NewMutex returns a *mutex.Mutex at path that follows spec; opts are
	// mutex.Options, applied as by mutex.New.
	NewMutex func(c *recipes.Client, path string, spec Spec, opts []any) (any, error)
	// HeldBy returns the node of the hold owner has on m, a *mutex.Mutex,
	// and whether it has one.
	HeldBy func(m any, owner any) (node string, ok bool)
)
