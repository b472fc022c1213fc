package rwlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// exampleServers starts a server for the examples; TestMain stops it.
var exampleServers = testutil.ExampleServers

// Example reads under the read lock, writes under the write lock, and
// downgrades: the writer takes the read lock and then releases the write
// lock, so no other writer can slip in between its write and its read.
func Example() {
	ctx := context.Background()
	servers := exampleServers() // e.g. []string{"127.0.0.1:2181"}
	c, err := recipes.Connect(context.Background(), servers)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())
	rw, err := rwlock.New(c, "/locks/catalog")
	if err != nil {
		fmt.Println(err)
		return
	}

	// Readers share the read lock.
	if _, err := rw.ReadLock().Acquire(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("reading")
	fmt.Println("read unlock:", rw.ReadLock().Release(ctx))

	// A writer holds the write lock alone.
	lease, err := rw.WriteLock().Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	token, _ := lease.Token(ctx) // strictly increases across holders
	fmt.Println("writing, token > 0:", token.Czxid > 0)

	// Downgrade: the write lock's owner gets the read lock at once...
	if _, err := rw.ReadLock().Acquire(ctx); err != nil {
		fmt.Println(err)
		return
	}
	// ...and keeps it after releasing the write lock.
	fmt.Println("write unlock:", rw.WriteLock().Release(ctx))
	fmt.Println("still reading:", rw.ReadLock().IsHeldInProcess())

	// Another process's writer stays out until the reader is done.
	other, err := recipes.Connect(context.Background(), servers)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer other.Close(context.Background())
	rw2, err := rwlock.New(other, "/locks/catalog")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = rw2.WriteLock().TryAcquire(ctx)
	fmt.Println("other writer acquired:", !errors.Is(err, recipes.ErrNotAcquired))

	// The reverse, an upgrade, would wait for itself: it is refused.
	_, err = rw.WriteLock().Acquire(ctx)
	fmt.Println("upgrade refused:", errors.Is(err, recipes.ErrUpgrade))

	fmt.Println("read unlock:", rw.ReadLock().Release(ctx))
	// Output:
	// reading
	// read unlock: <nil>
	// writing, token > 0: true
	// write unlock: <nil>
	// still reading: true
	// other writer acquired: false
	// upgrade refused: true
	// read unlock: <nil>
}
