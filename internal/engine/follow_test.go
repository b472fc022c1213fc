package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// views collects what a follower saw, for a test to wait on.
type views[T any] struct {
	mu   sync.Mutex
	seen []T
}

func (v *views[T]) add(x T) {
	v.mu.Lock()
	v.seen = append(v.seen, x)
	v.mu.Unlock()
}

func (v *views[T]) all() []T {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]T(nil), v.seen...)
}

func (v *views[T]) last() (T, bool) {
	all := v.all()
	if len(all) == 0 {
		var zero T
		return zero, false
	}
	return all[len(all)-1], true
}

// follow runs fn's follower until the test ends, and checks that it
// returns then.
func follow(t *testing.T, run func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done, "a follower returns nil when its ctx ends")
	})
}

// FollowNode sees a missing node, its creation, every write and its
// deletion, each once, with one standard watch at a time.
func TestFollowNode(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	e := engine.Of(c)
	var v views[engine.NodeView]
	follow(t, func(ctx context.Context) error { return e.FollowNode(ctx, "/follow/node", v.add) })
	eventually(t, 5*time.Second, "the first view", func() bool { return len(v.all()) == 1 })
	assert.False(t, v.all()[0].Exists)

	require.NoError(t, e.EnsureContainers(context.Background(), "/follow"))
	_, err := c.Create(context.Background(), "/follow/node", []byte("one"), 0)
	require.NoError(t, err)
	seen := func(n int, data string) func() bool {
		return func() bool {
			last, ok := v.last()
			return ok && len(v.all()) == n && last.Exists && string(last.Data) == data
		}
	}
	eventually(t, 5*time.Second, "created", seen(2, "one"))
	_, err = c.Set(context.Background(), "/follow/node", []byte("two"), -1)
	require.NoError(t, err)
	eventually(t, 5*time.Second, "written", seen(3, "two"))
	assert.Equal(t, int32(1), v.all()[2].Stat.Version)
	watches, err := zkc.WatchCount(0)
	require.NoError(t, err)
	assert.Equal(t, 1, watches, "one standard watch on the node")

	require.NoError(t, c.Delete(context.Background(), "/follow/node", -1))
	eventually(t, 5*time.Second, "deleted", func() bool {
		last, _ := v.last()
		return len(v.all()) == 4 && !last.Exists
	})
}

// FollowChildren sees each change of the list; a read after a reconnection
// that finds nothing new calls nobody.
func TestFollowChildren(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()})
	e := engine.Of(c)
	require.NoError(t, e.EnsureContainers(context.Background(), "/follow/kids"))
	var v views[engine.ChildrenView]
	follow(t, func(ctx context.Context) error { return e.FollowChildren(ctx, "/follow/kids", v.add) })
	eventually(t, 5*time.Second, "the first view", func() bool { return len(v.all()) == 1 })
	assert.True(t, v.all()[0].Exists)
	assert.Empty(t, v.all()[0].Children)

	_, err := c.Create(context.Background(), "/follow/kids/a", nil, 0)
	require.NoError(t, err)
	eventually(t, 5*time.Second, "a", func() bool {
		last, _ := v.last()
		return len(v.all()) == 2 && assert.ObjectsAreEqual([]string{"a"}, last.Children)
	})

	// A connection cut: the follower reads again on RECONNECTED, finds the
	// same list, and calls nobody; a change made meanwhile is seen.
	log := testutil.WatchStates(t, c)
	before := engine.Of(c).Stats().Children
	proxy.Cut()
	log.WaitFor(t, 0, 10*time.Second, recipes.StateSuspended, recipes.StateReconnected)
	eventually(t, 5*time.Second, "read again after the reconnection", func() bool { return engine.Of(c).Stats().Children > before })
	assert.Len(t, v.all(), 2, "nothing new")
	_, err = c.Create(context.Background(), "/follow/kids/b", nil, 0)
	require.NoError(t, err)
	eventually(t, 5*time.Second, "b", func() bool {
		last, _ := v.last()
		return len(v.all()) == 3 && len(last.Children) == 2
	})
}

// A read that fails is retried under the retry policy, and the follower
// ends with ErrClosed when the client closes.
func TestFollowRetriesAndClose(t *testing.T) {
	zkc := zktest.Start(t)
	c, err := recipes.Connect(context.Background(), zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
	require.NoError(t, err)
	e := engine.Of(c)
	var reads int
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		done <- e.Follow(context.Background(), "a flaky read", func(context.Context, *engine.Watches) error {
			mu.Lock()
			defer mu.Unlock()
			if reads++; reads < 3 {
				return assert.AnError
			}
			return nil // no watch: the next read comes with a reconnection
		})
	}()
	eventually(t, 5*time.Second, "three reads", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return reads == 3
	})
	require.NoError(t, c.Close(context.Background()))
	assert.ErrorIs(t, <-done, recipes.ErrClosed)
}
