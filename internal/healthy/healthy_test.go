// Package healthy_test runs a healthy cycle of every recipe against a
// server of its own and checks that the server logged no ERROR and no
// stack trace for it: normal use must not make an operator's alert fire.
package healthy_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// closer is what a cycle leaves to close, in order, at its end.
type closer interface{ Close(context.Context) error }

// Every recipe's healthy cycle (take, use, give back, close) on 3.8 and
// 3.9 alike leaves no ERROR line and no stack trace in the server's log.
func TestNoServerErrorsFromNormalUse(t *testing.T) {
	zkc := zktest.Start(t)
	if !zkc.Controllable() {
		t.Skip("needs a server whose log this test reads")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testutil.Connect(t, zkc.Servers())
	for name, cycle := range map[string]func(context.Context, *recipes.Client) error{
		"locks": locks, "election": elect, "values": values, "barriers": barriers,
		"cache and watch": watching, "nodes": nodeCycle, "discovery": discover, "queues": queues,
	} {
		require.NoError(t, cycle(ctx, c), name)
	}
	require.NoError(t, c.Close(ctx))
	for _, bad := range []string{" ERROR ", "\tat "} {
		require.False(t, zkc.LogContains(0, bad), "the server logged %q (its log's tail is printed above)", bad)
	}
}

func locks(ctx context.Context, c *recipes.Client) error {
	m, err := mutex.New(c, "/h/mutex")
	if err != nil {
		return err
	}
	l, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	if err := l.Release(ctx); err != nil {
		return err
	}
	rw, err := rwlock.New(c, "/h/rw")
	if err != nil {
		return err
	}
	for _, mu := range []*mutex.Mutex{rw.ReadLock(), rw.WriteLock()} {
		l, err := mu.Acquire(ctx)
		if err != nil {
			return err
		}
		if err := l.Release(ctx); err != nil {
			return err
		}
	}
	s, err := semaphore.New(c, "/h/sem", 2)
	if err != nil {
		return err
	}
	lease, err := s.Acquire(ctx)
	if err != nil {
		return err
	}
	return lease.Release(ctx)
}

func elect(ctx context.Context, c *recipes.Client) error {
	l, err := election.NewLatch(c, "/h/latch", "a")
	if err != nil {
		return err
	}
	if err := l.Start(ctx); err != nil {
		return err
	}
	if _, err := l.Await(ctx); err != nil {
		return err
	}
	led := make(chan struct{})
	s, err := election.NewSelector(c, "/h/sel", "a", func(context.Context, *election.Term) error {
		close(led)
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.Start(ctx); err != nil {
		return err
	}
	select {
	case <-led:
	case <-ctx.Done():
		return ctx.Err()
	}
	r, err := cleanup.New(c, cleanup.WithPaths("/h/mutex"))
	if err != nil {
		return err
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	return closeAll(ctx, r, s, l)
}

func values(ctx context.Context, c *recipes.Client) error {
	n, err := shared.NewCount(c, "/h/count", 1)
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		return err
	}
	if err := n.CompareAndSet(ctx, n.GetVersioned(), 2); err != nil {
		return err
	}
	a, err := atomicval.NewInt64(c, "/h/long")
	if err != nil {
		return err
	}
	if _, err := a.Increment(ctx); err != nil {
		return err
	}
	return n.Close(ctx)
}

func barriers(ctx context.Context, c *recipes.Client) error {
	b, err := barrier.New(c, "/h/barrier")
	if err != nil {
		return err
	}
	if err := b.Set(ctx); err != nil {
		return err
	}
	if err := b.Remove(ctx); err != nil {
		return err
	}
	if err := b.Wait(ctx); err != nil {
		return err
	}
	d, err := barrier.NewDouble(c, "/h/double", 1)
	if err != nil {
		return err
	}
	if err := d.Enter(ctx); err != nil {
		return err
	}
	return d.Leave(ctx)
}

func watching(ctx context.Context, c *recipes.Client) error {
	for _, mk := range []func(*recipes.Client, string, ...cache.Option) (*cache.Cache, error){cache.New, cache.NewChildrenCache, cache.NewNodeCache} {
		cc, err := mk(c, "/h")
		if err != nil {
			return err
		}
		if err := cc.Start(ctx); err != nil {
			return err
		}
		if err := cc.WaitReady(ctx); err != nil {
			return err
		}
		if err := cc.Close(ctx); err != nil {
			return err
		}
	}
	w, err := c.WatchPersistent(ctx, "/h", true, func(recipes.PersistentEvent) {})
	if err != nil {
		return err
	}
	return w.Close(ctx)
}

func nodeCycle(ctx context.Context, c *recipes.Client) error {
	n, err := nodes.NewPersistentNode(c, "/h/pn", nodes.Ephemeral, []byte("x"))
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		return err
	}
	if err := n.WaitReady(ctx); err != nil {
		return err
	}
	g, err := nodes.NewGroupMember(c, "/h/group", "a", nil)
	if err != nil {
		return err
	}
	if err := g.Start(ctx); err != nil {
		return err
	}
	if err := g.WaitReady(ctx); err != nil {
		return err
	}
	return closeAll(ctx, g, n)
}

func discover(ctx context.Context, c *recipes.Client) error {
	d, err := discovery.New(c, "/h/services")
	if err != nil {
		return err
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	if err := d.Register(ctx, &discovery.Instance{Name: "s", ID: "i", Port: 1}); err != nil {
		return err
	}
	p, err := d.NewProvider("s")
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	return closeAll(ctx, p, d)
}

func queues(ctx context.Context, c *recipes.Client) error {
	got := make(chan struct{}, 1)
	q, err := queue.New(c, "/h/q", queue.WithLockPath("/h/qlocks"), queue.WithConsumer(queue.ConsumerFunc(func(context.Context, *queue.Message) error {
		got <- struct{}{}
		return nil
	})))
	if err != nil {
		return err
	}
	if err := q.Start(ctx); err != nil {
		return err
	}
	if err := q.Put(ctx, []byte("job")); err != nil {
		return err
	}
	select {
	case <-got:
	case <-ctx.Done():
		return ctx.Err()
	}
	sq, err := queue.NewSimple(c, "/h/sq")
	if err != nil {
		return err
	}
	if err := sq.Offer(ctx, []byte("x")); err != nil {
		return err
	}
	if _, err := sq.Take(ctx); err != nil {
		return err
	}
	return q.Close(ctx)
}

func closeAll(ctx context.Context, cs ...closer) error {
	for _, x := range cs {
		if err := x.Close(ctx); err != nil {
			return err
		}
	}
	return nil
}
