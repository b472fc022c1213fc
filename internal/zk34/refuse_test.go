package zk34_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// refusals lists each recipe that needs container nodes (or TTL nodes),
// with the call that first creates one, and the requirement its error must
// name.
var refusals = []struct {
	name, path, needs string
	run               func(ctx context.Context, c *recipes.Client, path string) error
}{
	{"mutex", "/r/mutex", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		m, err := mutex.New(c, p)
		if err != nil {
			return err
		}
		_, err = m.Acquire(ctx)
		return err
	}},
	{"rwlock", "/r/rwlock", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		l, err := rwlock.New(c, p)
		if err != nil {
			return err
		}
		_, err = l.ReadLock().Acquire(ctx)
		return err
	}},
	{"semaphore", "/r/semaphore", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		s, err := semaphore.New(c, p, 2)
		if err != nil {
			return err
		}
		_, err = s.Acquire(ctx)
		return err
	}},
	{"semaphore mutex", "/r/semmutex", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		s, err := semaphore.NewMutex(c, p)
		if err != nil {
			return err
		}
		_, err = s.Acquire(ctx)
		return err
	}},
	{"semaphore v1", "/r/semv1", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		s, err := semaphore.NewV1(c, p, 2)
		if err != nil {
			return err
		}
		_, err = s.Acquire(ctx)
		return err
	}},
	{"leader latch", "/r/latch", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		l, err := election.NewLatch(c, p, "a")
		if err != nil {
			return err
		}
		if err := l.Start(ctx); err != nil {
			return err
		}
		defer l.Close(context.Background())
		_, err = l.Await(ctx)
		return err
	}},
	{"double barrier", "/r/dbarrier", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		b, err := barrier.NewDouble(c, p, 1)
		if err != nil {
			return err
		}
		return b.Enter(ctx)
	}},
	{"barrier", "/r/barrier/b", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		b, err := barrier.New(c, p)
		if err != nil {
			return err
		}
		return b.Set(ctx)
	}},
	{"simple queue", "/r/squeue", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		q, err := queue.NewSimple(c, p)
		if err != nil {
			return err
		}
		return q.Offer(ctx, []byte("x"))
	}},
	{"queue", "/r/queue", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		q, err := queue.New(c, p)
		if err != nil {
			return err
		}
		if err := q.Start(ctx); err != nil {
			return err
		}
		defer q.Close(context.Background())
		return q.Put(ctx, []byte("x"))
	}},
	{"queue sharder", "/r/sharder", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		shard := func(c *recipes.Client, path string) (*queue.Queue, error) { return queue.New(c, path) }
		s, err := queue.NewSharder(c, p, "/r/sharder-leader", shard)
		if err != nil {
			return err
		}
		if err := s.Start(ctx); err != nil {
			return err
		}
		defer s.Close(context.Background())
		_, err = s.Queue()
		return err
	}},
	{"leader-elected reaper", "/r/reaper-leader", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		r, err := cleanup.New(c, cleanup.WithLeaderElection(p, "a"), cleanup.WithPaths("/r/reaped"))
		if err != nil {
			return err
		}
		if err := r.Start(ctx); err != nil {
			return err
		}
		return r.Close(context.Background())
	}},
	{"persistent node", "/r/pnode/n", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		n, err := nodes.NewPersistentNode(c, p, nodes.Ephemeral, nil)
		if err != nil {
			return err
		}
		if err := n.Start(ctx); err != nil {
			return err
		}
		defer n.Close(context.Background())
		return n.WaitReady(ctx)
	}},
	{"persistent ttl node", "/r/ttl/n", "extendedTypesEnabled", func(ctx context.Context, c *recipes.Client, p string) error {
		n, err := nodes.NewPersistentTTLNode(c, p, time.Minute, nil)
		if err != nil {
			return err
		}
		if err := n.Start(ctx); err != nil {
			return err
		}
		defer n.Close(context.Background())
		return n.WaitReady(ctx)
	}},
	{"group member", "/r/group", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		g, err := nodes.NewGroupMember(c, p, "a", nil)
		if err != nil {
			return err
		}
		if err := g.Start(ctx); err != nil {
			return err
		}
		defer g.Close(context.Background())
		return g.WaitReady(ctx)
	}},
	{"discovery", "/r/discovery", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		d, err := discovery.New(c, p)
		if err != nil {
			return err
		}
		if err := d.Start(ctx); err != nil {
			return err
		}
		defer d.Close(context.Background())
		return d.Register(ctx, &discovery.Instance{Name: "svc", ID: "a", Address: "127.0.0.1", Port: 1})
	}},
	{"shared count", "/r/count/c", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		s, err := shared.NewCount(c, p, 1)
		if err != nil {
			return err
		}
		if err := s.Start(ctx); err != nil {
			return err
		}
		return s.Close(context.Background())
	}},
	{"atomic long", "/r/atomic/x", "3.5.3", func(ctx context.Context, c *recipes.Client, p string) error {
		n, err := atomicval.NewInt64(c, p)
		if err != nil {
			return err
		}
		_, err = n.Increment(ctx)
		return err
	}},
}

// TestZK34Refusals runs each recipe that needs container (or TTL) nodes
// on ZooKeeper 3.4, each with a client of its own: it fails at once, with
// an error that matches recipes.ErrUnimplemented and names the recipe, the
// path and the server it needs; the client stays usable.
func TestZK34Refusals(t *testing.T) {
	zkc := testutil.StartZK34(t)
	for _, r := range refusals {
		t.Run(strings.ReplaceAll(r.name, " ", "_"), func(t *testing.T) {
			var logs testutil.LogBuffer
			c := testutil.Connect(t, zkc.Servers(), recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			err := r.run(ctx, c, r.path)
			took := time.Since(start)
			t.Logf("%s: %v (after %v)", r.name, err, took.Round(time.Millisecond))
			require.Error(t, err)
			require.NotErrorIs(t, err, context.DeadlineExceeded, "a refusal, not a wait")
			require.ErrorIs(t, err, recipes.ErrUnimplemented)
			msg := err.Error()
			require.Contains(t, msg, r.needs, "the error names the server requirement")
			require.Contains(t, msg, r.path, "the error names the path")
			require.Equal(t, 1, strings.Count(msg, "zkrecipes:"), "the module's prefix once: %s", msg)
			require.Less(t, took, 5*time.Second, "promptly")
			// Again: the client remembers and refuses at once.
			start = time.Now()
			require.ErrorIs(t, r.run(ctx, c, r.path), recipes.ErrUnimplemented)
			require.Less(t, time.Since(start), 5*time.Second)
			// The client still works (after a TTL refusal, which is not
			// remembered, once go-zookeeper has reconnected: 3.4 closed the
			// connection after its answer).
			testutil.Eventually(t, 10*time.Second, "a create after the refusal", func() bool {
				_, err := c.Create(ctx, "/after-"+strings.ReplaceAll(r.name, " ", "-"), nil, 0)
				return err == nil || errors.Is(err, recipes.ErrNodeExists)
			})
			// Nothing went on trying in the background.
			for _, l := range strings.Split(logs.String(), "\n") {
				require.False(t, strings.Contains(l, "failed; trying again") && strings.Contains(l, "not implemented"), "a retry: %s", l)
			}
		})
	}
}

// TestZK34WithoutContainers: a client made WithoutContainers (persistent
// parents, as Curator's dontUseContainerParents) runs a mutex on 3.4.
func TestZK34WithoutContainers(t *testing.T) {
	zkc := testutil.StartZK34(t)
	c := testutil.Connect(t, zkc.Servers(), recipes.WithoutContainers())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := mutex.New(c, "/nc/locks/a")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
}

// TestZK34WatchPersistent: Client.WatchPersistent (Curator's
// PersistentWatcher, ZooKeeper 3.6+) is refused at once on 3.4 with an
// error that names the requirement, and the second time without asking
// the server again.
func TestZK34WatchPersistent(t *testing.T) {
	zkc := testutil.StartZK34(t)
	c := testutil.Connect(t, zkc.Servers())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 2 {
		start := time.Now()
		w, err := c.WatchPersistent(ctx, "/w", true, func(recipes.PersistentEvent) {})
		require.Nil(t, w)
		require.ErrorIs(t, err, recipes.ErrUnimplemented, "attempt %d", i)
		require.ErrorContains(t, err, "ZooKeeper 3.6")
		require.ErrorContains(t, err, "/w")
		require.Less(t, time.Since(start), 5*time.Second)
		t.Logf("attempt %d: %v", i, err)
	}
}
