package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

var lockDriver = &contend.Driver{Names: []string{"lock-"}}

// prefixOf returns the _c_<uuid>- prefix of a protected node's path.
func prefixOf(t *testing.T, path string) string {
	t.Helper()
	_, name := zkpath.SplitPath(path)
	require.True(t, strings.HasPrefix(name, zkpath.ProtectedPrefix), name)
	return name[:len(zkpath.ProtectedPrefix)+37]
}

// withPrefix lists the children of parent that start with prefix.
func withPrefix(t *testing.T, c *recipes.Client, parent, prefix string) []string {
	t.Helper()
	kids, _, err := c.Children(context.Background(), parent)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, k := range kids {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// A node carrying our uuid that is not our node is a ghost of ours (a
// create repeated after a lost reply): the engine deletes it when it sees
// it, instead of queueing behind it.
func TestGhostOfOwnNodeIsDeleted(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()

	first, err := (*engine.Client)(c).Enter(ctx, "/ghost", "lock-", nil, lockDriver) // so that ours is not sequence 0
	require.NoError(t, err)
	require.NoError(t, first.Leave(ctx))
	ct, err := (*engine.Client)(c).Enter(ctx, "/ghost", "lock-", nil, lockDriver)
	require.NoError(t, err)

	// Plant a ghost: our uuid prefix, ordered ahead of our node.
	ghost := "/ghost/" + prefixOf(t, ct.Path()) + "lock-0000000000"
	_, err = c.Create(ctx, ghost, nil, zk.FlagEphemeral)
	require.NoError(t, err)

	held, _, err := ct.Acquire(ctx, false)
	require.NoError(t, err)
	assert.True(t, held, "our own ghost must not block us")
	ok, _, err := c.Exists(ctx, ghost)
	require.NoError(t, err)
	assert.False(t, ok, "the ghost was deleted")
	require.NoError(t, ct.Leave(ctx))
}

// The lagging-follower case, as closely as a test can make it: a client
// pinned to a follower loses the reply of its create, and the follower is
// paused with the create in hand. The search after reconnecting syncs the
// parent first, and no copy of our node survives our release.
func TestLostCreateReplyThroughPausedFollower(t *testing.T) {
	zkc := zktest.StartEnsemble(t, 3)
	if !zkc.Controllable() {
		t.Skip("needs servers this test controls")
	}
	leader, err := zkc.Leader()
	require.NoError(t, err)
	f := (leader + 1) % 3
	proxy := zktest.NewProxy(t, zkc.Servers()[f])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	direct := connect(t, zkc.Servers())
	ctx := context.Background()
	require.NoError(t, (*engine.Client)(c).EnsureContainers(ctx, "/lag"))

	for i := 0; i < 3; i++ {
		log := testutil.WatchStates(t, c)
		resumed := make(chan struct{})
		proxy.CutAfterClientSendsFunc([]byte(zkpath.ProtectedPrefix), func() {
			assert.NoError(t, zkc.Pause(f))
			go func() { // hold the follower while the client reconnects
				defer close(resumed)
				log.WaitFor(t, 0, 10*time.Second, recipes.StateSuspended)
				time.Sleep(300 * time.Millisecond) // the fault's length, not a synchronisation
				assert.NoError(t, zkc.Resume(f))
			}()
		})
		before := (*engine.Client)(c).Stats()
		ct, err := (*engine.Client)(c).Enter(ctx, "/lag", "lock-", nil, lockDriver)
		require.NoError(t, err, "round %d", i)
		<-resumed
		d := (*engine.Client)(c).Stats().Sub(before)
		assert.GreaterOrEqual(t, d.Syncs, uint64(1), "round %d: the search after a lost reply syncs first", i)
		held, _, err := ct.Acquire(ctx, false)
		require.NoError(t, err)
		require.True(t, held, "round %d: nothing but ghosts of ours could be ahead", i)
		require.NoError(t, ct.Leave(ctx))
		prefix := prefixOf(t, ct.Path())
		eventually(t, 10*time.Second, "no copy of our node left", func() bool {
			return len(withPrefix(t, direct, "/lag", prefix)) == 0
		})
		t.Logf("round %d: requests %+v", i, d)
	}
}

// LOST comes one negotiated session timeout after the client sent the last
// request whose reply arrived, not after go-zookeeper's Disconnected event
// (which itself comes 2/3 of the timeout after the last byte).
func TestLostDeclaredOneTimeoutAfterLastAnswer(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	T := c.SessionTimeout()
	require.Equal(t, 2*time.Second, T)
	lost := make(chan time.Time, 1)
	remove := c.Listen(func(s recipes.State) {
		if s == recipes.StateLost {
			select {
			case lost <- time.Now():
			default:
			}
		}
	})
	defer remove()

	proxy.Blackhole()
	start := time.Now()
	var lostAt time.Time
	select {
	case lostAt = <-lost:
	case <-time.After(4 * T):
		t.Fatal("no LOST")
	}
	last, ok := engine.LastAnswered((*engine.Client)(c))
	require.True(t, ok)
	sinceLast, sinceCut := lostAt.Sub(last), lostAt.Sub(start)
	t.Logf("session timeout %v: LOST %v after the last answered request was sent, %v after the black-hole began", T, sinceLast, sinceCut)
	assert.GreaterOrEqual(t, sinceLast, T-5*time.Millisecond, "never before the server may expire the session")
	assert.Less(t, sinceLast, T+300*time.Millisecond, "LOST on time")
	assert.Less(t, sinceCut, T+300*time.Millisecond, "not 5/3 of the timeout")
}

// The negotiated session timeout comes from the server's handshake reply,
// for Connect and for an adopted connection dialled through a Wire.
func TestNegotiatedTimeoutFromHandshake(t *testing.T) {
	zkc := zktest.Start(t) // tickTime 200ms: the server grants at most 4s
	var lines atomic.Int64
	c := connect(t, zkc.Servers(), recipes.WithSessionTimeout(30*time.Second),
		recipes.WithZKLogger(zkLoggerFunc(func(string, ...any) { lines.Add(1) })))
	assert.Equal(t, 4*time.Second, c.SessionTimeout(), "Connect")

	w := engine.NewWire(testutil.TLSDialer(zkc.Servers()))
	conn, events, err := zk.Connect(zkc.Servers(), 30*time.Second, zk.WithDialer(w.Dial), zk.WithLogInfo(false))
	require.NoError(t, err)
	adopted, err := engine.NewClient(context.Background(), conn, events, engine.WithWire(engine.DefaultConfig(), w))
	require.NoError(t, err)
	defer adopted.Close(context.Background())
	assert.Equal(t, 4*time.Second, adopted.SessionTimeout(), "NewClient with a Wire")
	_, ok := engine.LastReceived(adopted)
	assert.True(t, ok)

	conn2, events2, err := zk.Connect(zkc.Servers(), 30*time.Second, testutil.ZKTLS(zkc.Servers()), zk.WithLogInfo(false))
	require.NoError(t, err)
	blind, err := recipes.NewClient(context.Background(), conn2, events2, recipes.WithSessionTimeout(30*time.Second))
	require.NoError(t, err)
	defer blind.Close(context.Background())
	assert.Equal(t, 30*time.Second, blind.SessionTimeout(), "without a Wire the requested timeout is all there is")
	_, ok = engine.LastReceived((*engine.Client)(blind))
	assert.False(t, ok)
}

type zkLoggerFunc func(string, ...any)

func (f zkLoggerFunc) Printf(format string, args ...any) { f(format, args...) }

// A session the client declared LOST can come back (a quorum paused longer
// than the session timeout). Its holders were told their holds are gone,
// so the client deletes their nodes at once: nothing keeps blocking the
// queue until the application unlocks.
func TestSessionBackAfterLocalLostDeletesLostHolds(t *testing.T) {
	zkc := zktest.StartEnsemble(t, 3)
	if !zkc.Controllable() {
		t.Skip("needs servers this test controls")
	}
	ctx := context.Background()
	a := connect(t, zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
	log := testutil.WatchStates(t, a)
	ct, err := (*engine.Client)(a).Enter(ctx, "/orphan", "lock-", nil, lockDriver)
	require.NoError(t, err)
	held, sig, err := ct.Acquire(ctx, true)
	require.NoError(t, err)
	require.True(t, held)
	sid := a.SessionID()

	leader, err := zkc.Leader()
	require.NoError(t, err)
	paused := []int{(leader + 1) % 3, (leader + 2) % 3} // no quorum left
	for _, i := range paused {
		require.NoError(t, zkc.Pause(i))
	}
	log.WaitFor(t, 0, 20*time.Second, recipes.StateSuspended, recipes.StateLost)
	assert.True(t, notify.IsClosed(sig.Lost), "the holder was told")
	for _, i := range paused {
		require.NoError(t, zkc.Resume(i))
	}
	log.WaitFor(t, 0, 60*time.Second, recipes.StateSuspended, recipes.StateLost, recipes.StateReconnected)
	require.Equal(t, sid, a.SessionID(), "the same session came back")

	b := connect(t, zkc.Servers())
	eventually(t, 10*time.Second, "the lost hold's node deleted", func() bool {
		ok, _, err := b.Exists(ctx, ct.Path())
		return err == nil && !ok
	})
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	other, err := (*engine.Client)(b).Enter(bctx, "/orphan", "lock-", nil, lockDriver)
	require.NoError(t, err)
	held, _, err = other.Acquire(bctx, true)
	require.NoError(t, err, "another session acquires without waiting for the application")
	require.True(t, held)
	require.NoError(t, other.Leave(ctx))
	require.NoError(t, ct.Leave(ctx), "the application's late release is harmless")
}

// An owned node (a PersistentNode, a group member, a registered service
// instance) is not a hold: when the session the client declared LOST comes
// back, its node is still there and still ours, and it stays: deleting
// and making it again would be the re-registration churn that caches of
// the service see as the instance leaving and coming back (found by the
// chaos suite's discovery worker on 3.9.6 after quorum pauses).
func TestSessionBackAfterLocalLostKeepsOwnedNodes(t *testing.T) {
	zkc := zktest.StartEnsemble(t, 3)
	if !zkc.Controllable() {
		t.Skip("needs servers this test controls")
	}
	ctx := context.Background()
	a := connect(t, zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
	log := testutil.WatchStates(t, a)
	own, err := (*engine.Client)(a).Own(engine.OwnedSpec{Path: "/owned-back/member", Mode: zk.FlagEphemeral, Data: []byte("x")})
	require.NoError(t, err)
	defer own.Close(context.Background())
	cur, err := own.Await(ctx)
	require.NoError(t, err)
	sid := a.SessionID()
	b := connect(t, zkc.Servers())
	_, before, err := b.Exists(ctx, cur.Path)
	require.NoError(t, err)

	leader, err := zkc.Leader()
	require.NoError(t, err)
	paused := []int{(leader + 1) % 3, (leader + 2) % 3} // no quorum left
	for _, i := range paused {
		require.NoError(t, zkc.Pause(i))
	}
	log.WaitFor(t, 0, 20*time.Second, recipes.StateSuspended, recipes.StateLost)
	for _, i := range paused {
		require.NoError(t, zkc.Resume(i))
	}
	log.WaitFor(t, 0, 60*time.Second, recipes.StateSuspended, recipes.StateLost, recipes.StateReconnected)
	require.Equal(t, sid, a.SessionID(), "the same session came back")

	// Give a reaper, and the loop's look after the reconnection, time.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		ok, st, err := b.Exists(ctx, cur.Path)
		if err == nil {
			require.True(t, ok, "the node was deleted")
			require.Equal(t, before.Czxid, st.Czxid, "the node was made again")
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, uint64(1), own.Node().Gen, "made once")
}

// Releasing never blocks on a dead connection: while SUSPENDED the delete
// goes to the background worker at once, and a ctx bounds a release whose
// server has gone silent before the client noticed.
func TestReleaseDoesNotBlockWhileDisconnected(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	direct := connect(t, zkc.Servers())
	ctx := context.Background()

	// Silent server, not yet noticed: ctx bounds the release.
	ct, err := (*engine.Client)(c).Enter(ctx, "/release", "lock-", nil, lockDriver)
	require.NoError(t, err)
	proxy.Blackhole()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	start := time.Now()
	require.NoError(t, ct.Leave(short))
	cancel()
	assert.Less(t, time.Since(start), time.Second, "Leave honours its ctx")

	// SUSPENDED: handed to the worker at once, even without a deadline.
	log := testutil.WatchStates(t, c)
	log.WaitFor(t, 0, 10*time.Second, recipes.StateSuspended)
	proxy.Restore()
	require.NoError(t, c.WaitConnected(ctx))
	ct2, err := (*engine.Client)(c).Enter(ctx, "/release", "lock-", nil, lockDriver)
	require.NoError(t, err)
	n := len(log.Snapshot())
	proxy.Blackhole()
	log.WaitFor(t, n, 10*time.Second, recipes.StateSuspended)
	start = time.Now()
	require.NoError(t, ct2.Leave(ctx))
	assert.Less(t, time.Since(start), 100*time.Millisecond, "no request while SUSPENDED")
	assert.GreaterOrEqual(t, (*engine.Client)(c).Stats().PendingDeletes, int64(1))
	proxy.Restore()
	eventually(t, 10*time.Second, "both nodes deleted by the worker", func() bool {
		kids, _, err := direct.Children(ctx, "/release")
		return err == nil && len(kids) == 0 && (*engine.Client)(c).Stats().PendingDeletes == 0
	})
}

// Every transport error go-zookeeper may pass through is connection loss.
func TestTransportErrorsAreRetryable(t *testing.T) {
	for _, err := range []error{
		&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)},
		&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
		io.EOF, io.ErrUnexpectedEOF, net.ErrClosed, os.ErrDeadlineExceeded,
		fmt.Errorf("wrapped: %w", syscall.EPIPE),
		zk.ErrConnectionClosed, zk.ErrNoServer, zk.ErrSessionMoved, recipes.ErrNotConnected,
	} {
		assert.True(t, recipes.IsRetryable(err), "%v", err)
	}
	for _, err := range []error{nil, zk.ErrNoNode, zk.ErrNodeExists, zk.ErrSessionExpired, zk.ErrNoAuth, context.Canceled, context.DeadlineExceeded,
		fmt.Errorf("zkrecipes: get /x: %w", context.DeadlineExceeded), recipes.ErrClosed} {
		assert.False(t, recipes.IsRetryable(err), "%v", err)
	}
}

// A one-shot acquire while the client is not connected says so with a
// sentinel.
func TestTryAcquireWhileSuspendedIsErrNotConnected(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	ctx := context.Background()
	ct, err := (*engine.Client)(c).Enter(ctx, "/try", "lock-", nil, lockDriver)
	require.NoError(t, err)
	log := testutil.WatchStates(t, c)
	proxy.Cut()
	proxy.Blackhole()
	log.WaitFor(t, 0, 10*time.Second, recipes.StateSuspended)
	held, _, err := ct.Acquire(ctx, false)
	assert.False(t, held)
	assert.ErrorIs(t, err, recipes.ErrNotConnected)
	assert.True(t, recipes.IsRetryable(err))
	proxy.Restore()
}

// countingHostProvider is go-zookeeper's DNS host provider, counted.
type countingHostProvider struct {
	zk.DNSHostProvider
	inits int
}

func (h *countingHostProvider) Init(servers []string) error {
	h.inits++
	return h.DNSHostProvider.Init(servers)
}

// Every dialing option reaches go-zookeeper, however many are given (they
// used to be passed by count, and a sixth would have been dropped).
func TestConnectPassesEveryDialingOption(t *testing.T) {
	zkc := zktest.Start(t)
	var dials int
	var mu sync.Mutex
	hp := &countingHostProvider{}
	var logged atomic.Bool
	c := connect(t, zkc.Servers(),
		recipes.WithDialer(func(network, addr string, timeout time.Duration) (net.Conn, error) {
			mu.Lock()
			dials++
			mu.Unlock()
			return net.DialTimeout(network, addr, timeout)
		}),
		recipes.WithHostProvider(hp),
		recipes.WithMaxBufferSize(1<<20),
		recipes.WithZKLogger(zkLoggerFunc(func(string, ...any) { logged.Store(true) })))
	mu.Lock()
	assert.GreaterOrEqual(t, dials, 1, "the user's dialer, under the Wire")
	mu.Unlock()
	assert.Equal(t, 1, hp.inits, "the host provider")
	assert.True(t, logged.Load(), "the go-zookeeper logger")
	assert.Equal(t, 4*time.Second, c.SessionTimeout(), "the Wire still reads the handshake")
}

// A hold whose signal has already closed reports Done at once, on the
// first look (Done's channel used to be made open and closed a moment
// later, so a non-blocking check passed a lost hold: found by the chaos
// suite).
func TestHoldDoneClosedAtFirstLook(t *testing.T) {
	over := make(chan struct{})
	close(over)
	h := engine.NewHold(nil, "/x", engine.Signals{Done: over, Lost: over})
	select {
	case <-h.Done():
	default:
		t.Fatal("Done of a hold whose signal closed is open")
	}
}
