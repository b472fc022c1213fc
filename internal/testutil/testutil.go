// Package testutil holds the helpers the recipe packages' tests share:
// a TestMain that checks for leaked goroutines, clients closed at the end
// of a test, servers for Example functions, and condition polling.
package testutil

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	_ "github.com/zkrecipes/zkrecipes/recipes/zktest/zkdocker" // no local ZooKeeper: a container
)

var (
	mu       sync.Mutex
	launched []*zktest.Cluster
)

// Main runs the tests, stops the servers ExampleServers started, and fails
// the run if goroutines are left behind.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	for _, cl := range launched {
		cl.Close()
	}
	launched = nil
	mu.Unlock()
	if code == 0 {
		// One goroutine may outlive a Close whose ctx ended (or a failed
		// Connect): go-zookeeper's own Close, which waits out its 1s for
		// the reply to a close request it could not send. Close documents
		// it; everything else must be gone.
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).Close")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// ExampleServers starts a standalone server for an Example function (which
// has no testing.T); Main stops it.
func ExampleServers() []string {
	cl, err := zktest.Launch(1)
	if err != nil {
		panic(err)
	}
	mu.Lock()
	launched = append(launched, cl)
	mu.Unlock()
	return cl.Servers()
}

// Connect returns a client that is closed at the end of the test.
func Connect(t testing.TB, servers []string, opts ...recipes.Option) *recipes.Client {
	t.Helper()
	c, err := recipes.Connect(context.Background(), servers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Eventually polls cond until it holds, failing the test after timeout.
var Eventually = zktest.Eventually
