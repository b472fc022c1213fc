package nodes_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Environment of a helper process.
const (
	nhEnvRole    = "ZKN_HELPER"  // "ttl"
	nhEnvServers = "ZKN_SERVERS" // comma-separated host:port
	nhEnvPath    = "ZKN_PATH"    // the TTL node's path
)

var nhHelpers = testutil.Helpers{Test: "TestNodesHelperProcess", RoleEnv: nhEnvRole, Timeout: time.Minute}

// TestNodesHelperProcess is not a test: it is the body of the helper
// processes the TTL tests start. It returns at once unless ZKN_HELPER is
// set.
func TestNodesHelperProcess(t *testing.T) {
	nhHelpers.Run(map[string]func() error{"ttl": nhTTL})
}

// nhTTL keeps a PersistentTTLNode (TTL 1 s) at ZKN_PATH until it is
// killed (or stdin ends).
func nhTTL() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := testutil.Dial(ctx, strings.Split(os.Getenv(nhEnvServers), ","), recipes.WithSessionTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	n, err := nodes.NewPersistentTTLNode(c, os.Getenv(nhEnvPath), time.Second, []byte("helper"))
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		return err
	}
	_, _ = os.Stdin.Read(make([]byte, 1))
	return n.Close(ctx)
}

// A process that dies after making the parent and before its first touch
// leaves a parent without a child: the server reaps it a TTL later
// (Curator 5.4 to 5.8 make the parent a CONTAINER, which the server never
// reaps if it never had a child: GH-1258). The process is SIGKILLed by
// the proxy between it sending the parent's create and it hearing the
// reply, so it cannot have touched. A process killed after touching
// leaves a child and a parent, both reaped.
func TestPersistentTtlNodeProcessKilled(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	b := connect(t, zkc.Servers())

	t.Run("before its first touch", func(t *testing.T) {
		p := zktest.NewProxy(t, zkc.Servers()[0])
		hc := make(chan *testutil.HelperProc, 1)
		killed := make(chan struct{})
		const path = "/ttldie/before"
		// With /ttldie there, the parent's create is the helper's first
		// request naming the path.
		_, err := b.Create(ctx, "/ttldie", nil, 0)
		if !errors.Is(err, zk.ErrNodeExists) {
			require.NoError(t, err)
		}
		p.CutAfterClientSendsFunc([]byte(path), func() {
			(<-hc).Kill()
			close(killed)
		})
		hc <- nhHelpers.Start(t, "ttl-before", "ttl", nhEnvServers+"="+p.Addr(), nhEnvPath+"="+path)
		select {
		case <-killed:
		case <-time.After(30 * time.Second):
			t.Fatal("the helper never sent its parent's create")
		}
		_, st, ok := dataAt(t, b, path)
		require.True(t, ok, "the parent was made")
		require.Zero(t, st.NumChildren, "the helper died before its first touch")
		zktest.Eventually(t, 15*time.Second, "the server reaps the parent", func() bool {
			_, _, ok := dataAt(t, b, path)
			return !ok
		})
	})

	t.Run("after touching", func(t *testing.T) {
		const path = "/ttldie/after"
		h := nhHelpers.Start(t, "ttl-after", "ttl", nhEnvServers+"="+strings.Join(zkc.Servers(), ","), nhEnvPath+"="+path)
		zktest.Eventually(t, 15*time.Second, "touched", func() bool {
			s, err := nodes.ReadTTLNode(ctx, b, path)
			return err == nil && s.Touched
		})
		h.Kill()
		zktest.Eventually(t, 15*time.Second, "the server reaps the child, then the parent", func() bool {
			s, err := nodes.ReadTTLNode(ctx, b, path)
			return err == nil && !s.Exists
		})
	})
}
