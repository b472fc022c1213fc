package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/gid"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	exampleServers = testutil.ExampleServers
	eventually     = testutil.Eventually
)

// connect returns a client closed at the end of the test.
func connect(t *testing.T, servers []string, opts ...recipes.Option) *recipes.Client {
	return testutil.Connect(t, servers, opts...)
}

func TestStateSuspendedThenReconnectedOnPause(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithTickTime(500*time.Millisecond))
	if !zkc.Controllable() {
		t.Skip("needs a server this test controls")
	}
	c := connect(t, zkc.Servers(), recipes.WithSessionTimeout(6*time.Second))
	log := testutil.WatchStates(t, c)
	sid := c.SessionID()
	hold := (*engine.Client)(c).HoldSignal((*engine.Client)(c).Snapshot())

	require.NoError(t, zkc.Pause(0))
	log.WaitFor(t, 0, 10*time.Second, recipes.StateSuspended)
	select {
	case <-hold:
	default:
		t.Fatal("standard policy: hold signal must close on SUSPENDED")
	}
	require.NoError(t, zkc.Resume(0))
	got := log.WaitFor(t, 0, 10*time.Second, recipes.StateSuspended, recipes.StateReconnected)
	assert.NotContains(t, got, recipes.StateLost)
	assert.Equal(t, sid, c.SessionID(), "same session after a short pause")
	assert.False(t, notify.IsClosed((*engine.Client)(c).Snapshot().Lost))
}

func TestStateSuspendedThenLostOnBlackhole(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	// Ask for 30s: the server (tickTime 200ms) grants at most 4s, and LOST
	// must follow the negotiated timeout, not the requested one.
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(30*time.Second),
		recipes.WithErrorPolicy(recipes.PolicySession))
	require.Equal(t, 4*time.Second, c.SessionTimeout(), "negotiated session timeout")
	log := testutil.WatchStates(t, c)
	snap := (*engine.Client)(c).Snapshot()
	hold := (*engine.Client)(c).HoldSignal(snap)
	oldSID := c.SessionID()

	proxy.Blackhole()
	start := time.Now()
	log.WaitFor(t, 0, 10*time.Second, recipes.StateSuspended)
	assert.False(t, notify.IsClosed(hold), "session policy: SUSPENDED does not end a hold")
	log.WaitFor(t, 0, 12*time.Second, recipes.StateSuspended, recipes.StateLost)
	t.Logf("LOST %v after the black-hole began, while still black-holed", time.Since(start))
	assert.True(t, notify.IsClosed(hold), "LOST ends the hold")
	assert.True(t, notify.IsClosed(snap.Lost))

	proxy.Restore()
	log.WaitFor(t, 0, 20*time.Second, recipes.StateSuspended, recipes.StateLost, recipes.StateReconnected)
	require.NoError(t, c.WaitConnected(context.Background()))
	assert.NotEqual(t, oldSID, c.SessionID(), "a new session after LOST")
	assert.False(t, notify.IsClosed((*engine.Client)(c).HoldSignal((*engine.Client)(c).Snapshot())), "fresh signals after reconnect")
}

func TestStateReconnectedAfterLeaderKill(t *testing.T) {
	zkc := zktest.StartEnsemble(t, 3, zktest.WithTickTime(300*time.Millisecond))
	if !zkc.Controllable() {
		t.Skip("needs a server this test controls")
	}
	leader, err := zkc.Leader()
	require.NoError(t, err)
	c := connect(t, zkc.Servers(), recipes.WithSessionTimeout(6*time.Second))
	log := testutil.WatchStates(t, c)
	sid := c.SessionID()

	require.NoError(t, zkc.Kill(leader))
	got := log.WaitFor(t, 0, 20*time.Second, recipes.StateSuspended, recipes.StateReconnected)
	assert.NotContains(t, got, recipes.StateLost)
	assert.Equal(t, sid, c.SessionID(), "the session survives a leader change")
	_, err = c.Create(context.Background(), "/after-failover", nil, 0)
	require.NoError(t, err)
	require.NoError(t, zkc.Restart(leader))
}

// A listener registered after Connect hears the current state first, then
// every transition: the natural Connect-then-Listen never misses CONNECTED.
func TestListenersGetEveryTransitionInOrderAndSlowOnesDoNotBlock(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))

	block := make(chan struct{})
	var slow []recipes.State
	var mu sync.Mutex
	removeSlow := c.Listen(func(s recipes.State) {
		<-block
		mu.Lock()
		slow = append(slow, s)
		mu.Unlock()
	})
	defer removeSlow()
	ch, cancel := c.Subscribe()
	defer cancel()
	fast := testutil.WatchStates(t, c)

	for i := 0; i < 3; i++ { // three blips, each SUSPENDED then RECONNECTED
		n := len(fast.Snapshot())
		proxy.Cut()
		fast.WaitFor(t, n, 10*time.Second, recipes.StateSuspended, recipes.StateReconnected)
	}
	close(block) // the slow listener catches up with the current state, then all six
	want := []recipes.State{
		recipes.StateConnected, // the state when it registered
		recipes.StateSuspended, recipes.StateReconnected, recipes.StateSuspended,
		recipes.StateReconnected, recipes.StateSuspended, recipes.StateReconnected,
	}
	eventually(t, 5*time.Second, "slow listener", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(slow) == len(want)
	})
	assert.Equal(t, want, slow)
	for i, w := range want {
		select {
		case s := <-ch:
			assert.Equal(t, w, s, "subscription event %d", i)
		case <-time.After(5 * time.Second):
			t.Fatalf("subscription: missing event %d", i)
		}
	}
}

func TestInvalidPathsAndMisuse(t *testing.T) {
	for _, p := range []string{"", "relative", "a/b", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/.", "/..", "/nul\x00", "/ctl\x01", "/bad\ufffe"} {
		err := recipes.ValidatePath(p)
		assert.ErrorIs(t, err, recipes.ErrInvalidPath, "%q", p)
	}
	for _, p := range []string{"/", "/a", "/a/b-c_d.e", "/ünïcode", "/a/...", "/a/.b"} {
		assert.NoError(t, recipes.ValidatePath(p), "%q", p)
	}

	var nilClient *recipes.Client
	_, err := nilClient.FullPath("/x")
	assert.ErrorIs(t, err, recipes.ErrNilClient)
	assert.ErrorIs(t, (*engine.Client)(nilClient).Check(), recipes.ErrNilClient)
	assert.ErrorIs(t, nilClient.Close(context.Background()), recipes.ErrNilClient)

	_, err = recipes.NewClient(context.Background(), nil, nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = testutil.Dial(context.Background(), nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	for name, opt := range map[string]recipes.Option{
		"session":   recipes.WithSessionTimeout(0),
		"connect":   recipes.WithConnectTimeout(-1),
		"logger":    recipes.WithLogger(nil),
		"namespace": recipes.WithNamespace("/bad/"),
		"acl":       recipes.WithACLProvider(nil),
		"auth":      recipes.WithAuth("", nil),
		"retry":     recipes.WithRetryPolicy(nil),
		"policy":    recipes.WithErrorPolicy(7),
		"nil":       nil,
	} {
		_, err := testutil.Dial(context.Background(), []string{"127.0.0.1:1"}, opt)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, name)
	}

	zkc := zktest.Start(t)
	c, err := testutil.Dial(context.Background(), zkc.Servers(), recipes.WithNamespace("app"))
	require.NoError(t, err)
	full, err := c.FullPath("/locks/a")
	require.NoError(t, err)
	assert.Equal(t, "/app/locks/a", full)
	_, err = c.FullPath("locks")
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	require.NoError(t, c.Close(context.Background()))
	require.NoError(t, c.Close(context.Background()), "Close twice is fine")
	assert.ErrorIs(t, (*engine.Client)(c).Check(), recipes.ErrClosed)
	assert.ErrorIs(t, c.AddAuth(context.Background(), "digest", []byte("a:b")), recipes.ErrClosed)
	assert.ErrorIs(t, c.WaitConnected(context.Background()), recipes.ErrClosed)
	_, err = (*engine.Client)(c).Enter(context.Background(), "/x", "lock-", nil, &contend.Driver{Names: []string{"lock-"}})
	assert.ErrorIs(t, err, recipes.ErrClosed)
}

func TestAdoptedConnectionNamespaceAndAuth(t *testing.T) {
	zkc := zktest.Start(t)
	conn, events, err := zk.Connect(zkc.Servers(), 4*time.Second, testutil.ZKTLS(zkc.Servers()), zk.WithLogInfo(false))
	require.NoError(t, err)
	c, err := recipes.NewClient(context.Background(), conn, events, recipes.WithNamespace("/ns"),
		recipes.WithAuth("digest", []byte("user:secret")),
		recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL {
			return zk.DigestACL(zk.PermAll, "user", "secret")
		})))
	require.NoError(t, err)
	defer c.Close(context.Background())
	assert.Equal(t, recipes.StateConnected, c.State())
	full, err := c.FullPath("/locks/x")
	require.NoError(t, err)
	ct, err := (*engine.Client)(c).Enter(context.Background(), full, "lock-", []byte("hi"), &contend.Driver{Names: []string{"lock-"}})
	require.NoError(t, err)
	p := ct.Path()
	assert.True(t, strings.HasPrefix(p, "/ns/locks/x/_c_"))

	// Another session without the credentials cannot read the node.
	other := connect(t, zkc.Servers())
	_, _, err = other.Get(context.Background(), p)
	assert.ErrorIs(t, err, zk.ErrNoAuth)
	data, _, err := (*engine.Client)(c).Get(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, "hi", string(data))
	data, _, err = c.Get(context.Background(), strings.TrimPrefix(p, "/ns"))
	require.NoError(t, err, "the Client's own methods apply the namespace")
	assert.Equal(t, "hi", string(data))
}

func TestRetryStopsOnNonRetryableAndHonoursContext(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	calls := 0
	err := c.Retry(context.Background(), func() error { calls++; return zk.ErrNoNode })
	assert.ErrorIs(t, err, zk.ErrNoNode)
	assert.Equal(t, 1, calls, "NoNode is not retried")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	calls = 0
	err = c.Retry(ctx, func() error { calls++; return zk.ErrConnectionClosed })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.Greater(t, calls, 1, "connection loss is retried")
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	zkc := zktest.Start(t)
	opt := goleak.IgnoreCurrent()
	for i := 0; i < 3; i++ {
		c, err := testutil.Dial(context.Background(), zkc.Servers())
		require.NoError(t, err)
		c.Listen(func(recipes.State) {})
		ch, _ := c.Subscribe()
		_ = ch
		_, err = (*engine.Client)(c).Enter(context.Background(), fmt.Sprintf("/leak/%d", i), "lock-", nil, &contend.Driver{Names: []string{"lock-"}})
		require.NoError(t, err)
		require.NoError(t, c.Close(context.Background()))
	}
	goleak.VerifyNone(t, opt)
}

func TestGoroutineID(t *testing.T) {
	a := gid.GoroutineID()
	assert.NotZero(t, a)
	assert.Equal(t, a, gid.GoroutineID())
	ch := make(chan uint64)
	go func() { ch <- gid.GoroutineID() }()
	assert.NotEqual(t, a, <-ch)
}

func TestUUIDFormat(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		u := zkpath.NewUUID()
		require.Len(t, u, 36)
		require.False(t, seen[u])
		seen[u] = true
	}
}

var _ = errors.Is
