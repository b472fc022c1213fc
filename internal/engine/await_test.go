package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Await against a real server: a condition over a watched read ("at least
// two children", as a double barrier asks) holds once enough children are
// there; each look is woken by the watch it left, not by polling.
func TestAwaitChildrenCondition(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	e := (*engine.Client)(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, e.EnsureContainers(ctx, "/await"))
	_, err := c.Create(ctx, "/await/a", nil, 0)
	require.NoError(t, err)

	type look struct {
		wake engine.Wake
		kids int
	}
	looks := make(chan look, 10)
	done := make(chan error, 1)
	go func() {
		held, err := e.Await(ctx, engine.Wait{What: "/await"}, func(_ engine.Snapshot, wk engine.Wake) (engine.Look, error) {
			kids, _, watch, err := e.ChildrenW(ctx, "/await")
			if err != nil {
				return engine.Look{}, err
			}
			looks <- look{wk, len(kids)} // after the read: the test's create comes after it
			if len(kids) >= 2 {
				return engine.Look{Done: true}, nil
			}
			return engine.Look{Watch: watch}, nil
		})
		if err == nil && !held {
			err = errors.New("not done")
		}
		done <- err
	}()
	first := <-looks
	assert.Nil(t, first.wake.Event, "the first look has no wake")
	assert.Equal(t, 1, first.kids)
	_, err = c.Create(ctx, "/await/b", nil, 0)
	require.NoError(t, err)
	require.NoError(t, <-done)
	second := <-looks
	require.NotNil(t, second.wake.Event, "woken by the watch")
	assert.Equal(t, zk.EventNodeChildrenChanged, second.wake.Event.Type)
	assert.Equal(t, 2, second.kids)
}

// Once makes one look; Also wakes a look; Until and ctx end the wait with
// errors that say so; a retryable error is retried; another is returned as
// it is.
func TestAwaitEndings(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	e := (*engine.Client)(c)
	ctx := context.Background()
	never := func(engine.Snapshot, engine.Wake) (engine.Look, error) { return engine.Look{}, nil }

	held, err := e.Await(ctx, engine.Wait{What: "x", Once: true}, never)
	assert.NoError(t, err)
	assert.False(t, held, "Once: one look, not done")

	also := make(chan struct{})
	looks := 0
	held, err = e.Await(ctx, engine.Wait{What: "x"}, func(_ engine.Snapshot, wk engine.Wake) (engine.Look, error) {
		looks++
		if looks == 1 {
			close(also)
			return engine.Look{Also: also}, nil
		}
		assert.True(t, wk.Also)
		return engine.Look{Done: true}, nil
	})
	assert.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, 2, looks)

	until := make(chan struct{})
	close(until)
	_, err = e.Await(ctx, engine.Wait{What: "x", Until: until}, never)
	assert.ErrorIs(t, err, engine.ErrUntil)

	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = e.Await(tctx, engine.Wait{What: "/some/path"}, never)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "/some/path")

	tries := 0
	held, err = e.Await(ctx, engine.Wait{What: "x"}, func(engine.Snapshot, engine.Wake) (engine.Look, error) {
		if tries++; tries < 3 {
			return engine.Look{}, zk.ErrConnectionClosed
		}
		return engine.Look{Done: true}, nil
	})
	assert.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, 3, tries, "retryable errors are retried")

	bad := errors.New("bad")
	_, err = e.Await(ctx, engine.Wait{What: "x"}, func(engine.Snapshot, engine.Wake) (engine.Look, error) { return engine.Look{}, bad })
	assert.Same(t, bad, err)

	_, err = e.Await(ctx, engine.Wait{What: "x"}, func(engine.Snapshot, engine.Wake) (engine.Look, error) {
		return engine.Look{}, zk.ErrSessionExpired
	})
	assert.ErrorIs(t, err, recipes.ErrSessionLost)

	_, err = e.Await(ctx, engine.Wait{What: "x", Session: c.SessionID() + 1}, never)
	assert.ErrorIs(t, err, recipes.ErrSessionLost, "connected in another session")

	_, err = e.Await(nil, engine.Wait{}, never) //nolint:staticcheck // a nil ctx is refused
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}

// While the client has no connection, Await waits for it without looking
// (Once says ErrNotConnected); the wait ends with ErrClosed when the client
// closes.
func TestAwaitDisconnected(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c, err := testutil.Dial(context.Background(), []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	require.NoError(t, err)
	e := (*engine.Client)(c)
	log := testutil.WatchStates(t, c)
	proxy.Blackhole()
	log.WaitFor(t, 0, 10*time.Second, recipes.StateSuspended)

	looked := false
	_, err = e.Await(context.Background(), engine.Wait{What: "x", Once: true}, func(engine.Snapshot, engine.Wake) (engine.Look, error) {
		looked = true
		return engine.Look{}, nil
	})
	assert.ErrorIs(t, err, recipes.ErrNotConnected)
	assert.False(t, looked)

	done := make(chan error, 1)
	go func() {
		_, err := e.Await(context.Background(), engine.Wait{What: "x"}, func(engine.Snapshot, engine.Wake) (engine.Look, error) {
			looked = true
			return engine.Look{}, nil
		})
		done <- err
	}()
	require.NoError(t, c.Close(context.Background()))
	assert.ErrorIs(t, <-done, recipes.ErrClosed)
	assert.False(t, looked, "no look without a connection")
	proxy.Restore()
}
