// Package testutil holds the helpers the recipe packages' tests share:
// a TestMain that checks for leaked goroutines, clients closed at the end
// of a test, servers for Example functions and for a package's tests to
// share, namespaces of their own, and condition polling.
package testutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
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

// Main runs the tests, stops the servers ExampleServers and SharedServer
// started, and fails the run if goroutines are left behind.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit: it returns the exit code, for a TestMain
// that has more to clean up.
func Run(m *testing.M) int {
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
	return code
}

var shared struct {
	once sync.Once
	cl   *zktest.Cluster
	err  error
}

// SharedServer returns the standalone server that the tests of this
// process share, each under paths of its own, started on first use; Main
// (or Run) stops it. Without a ZooKeeper to start it skips the test, or
// fails it under CI (Unavailable).
func SharedServer(t testing.TB) *zktest.Cluster {
	t.Helper()
	shared.once.Do(func() {
		shared.cl, shared.err = zktest.Launch(1)
		if shared.err == nil {
			mu.Lock()
			launched = append(launched, shared.cl)
			mu.Unlock()
		}
	})
	if errors.Is(shared.err, zktest.ErrUnavailable) {
		Unavailable(t, shared.err)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.cl
}

var namespaces = map[string]int{}

// Namespace returns a namespace for this run of test t: its name, with
// "-run<N>" after it from the second run of that name in this process on
// (go test -count=N), so that a test's paths and sequence numbers are
// its own on the server SharedServer keeps for the whole process. Each
// call is a new run: call it once in a test.
func Namespace(t testing.TB) string {
	mu.Lock()
	defer mu.Unlock()
	name := t.Name()
	namespaces[name]++
	if n := namespaces[name]; n > 1 {
		return fmt.Sprintf("%s-run%d", name, n)
	}
	return name
}

// ExampleServers starts a standalone server for an Example function (which
// has no testing.T); Main stops it. It is a plain server even under
// ZK_TEST_TLS: an Example shows the plain recipes.Connect a reader copies,
// and its output is checked, not its transport.
func ExampleServers() []string {
	cl, err := zktest.Launch(1, zktest.WithoutTLS())
	if err != nil {
		panic(err)
	}
	mu.Lock()
	launched = append(launched, cl)
	mu.Unlock()
	return cl.Servers()
}

// Connect returns a client (made by Dial: over TLS to a TLS cluster) that
// is closed at the end of the test.
func Connect(t testing.TB, servers []string, opts ...recipes.Option) *recipes.Client {
	t.Helper()
	c, err := Dial(context.Background(), servers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Eventually polls cond until it holds, failing the test after timeout.
var Eventually = zktest.Eventually

// LogBuffer is a log sink safe for the goroutines that log into it: give
// it to slog.NewTextHandler, read it with String.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Count returns how many of the lines written so far contain word.
func (l *LogBuffer) Count(word string) int {
	n := 0
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, word) {
			n++
		}
	}
	return n
}
