package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// On a slow link LOST still comes before the server can expire the
// session: it is timed from when we sent the last request whose reply came
// back (the server heard us no earlier), not from when that reply arrived,
// which is one one-way latency later. The proxy adds 300 ms each way, the
// link is then black-holed, and a second session, connected to the server
// directly, watches the first one's ephemeral node vanish when the server
// expires it.
func TestLostBeforeServerExpiresOnSlowLink(t *testing.T) {
	const latency = 300 * time.Millisecond
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	proxy.SetLatency(latency)
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	T := c.SessionTimeout()
	require.Equal(t, 2*time.Second, T)
	sid := c.SessionID()

	const node = "/lost-latency"
	_, err := (*engine.Client)(c).Conn().Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	observer, _, err := zk.Connect(zkc.Servers(), 4*time.Second, testutil.ZKTLS(zkc.Servers()), zk.WithLogInfo(false))
	require.NoError(t, err)
	defer observer.Close()
	ok, _, watch, err := observer.ExistsW(node)
	require.NoError(t, err)
	require.True(t, ok)

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

	// Wait for a request sent from now on to be answered over the slow link
	// (a ping, every third of the timeout).
	since := time.Now()
	zktest.Eventually(t, 2*T, "a ping answered over the slow link", func() bool {
		sent, ok := engine.LastAnswered((*engine.Client)(c))
		return ok && sent.After(since)
	})
	proxy.Blackhole()
	cut := time.Now()

	var lostAt, expiredAt time.Time
	for lostAt.IsZero() || expiredAt.IsZero() {
		select {
		case lostAt = <-lost:
		case ev := <-watch:
			require.Equal(t, zk.EventNodeDeleted, ev.Type, "%+v", ev)
			expiredAt = time.Now()
			watch = nil
		case <-time.After(4 * T):
			t.Fatalf("after %v: LOST at %v, node deleted at %v", time.Since(cut), lostAt, expiredAt)
		}
	}
	zktest.Eventually(t, 5*time.Second, "the server's log to say it expired the session", func() bool {
		return zkc.LogContains(0, fmt.Sprintf("Expiring session 0x%x", sid))
	})
	lastByte, ok := engine.LastReceived((*engine.Client)(c))
	require.True(t, ok)
	margin := expiredAt.Sub(lostAt)
	t.Logf("session timeout %v, %v each way: LOST %v after the cut, the server expired the session %v after it; margin %v",
		T, latency, lostAt.Sub(cut).Round(time.Millisecond), expiredAt.Sub(cut).Round(time.Millisecond), margin.Round(time.Millisecond))
	t.Logf("timed from the last byte received (the rule before), LOST would have come %v after the cut: %v after the expiry",
		lastByte.Add(T).Sub(cut).Round(time.Millisecond), lastByte.Add(T).Sub(expiredAt).Round(time.Millisecond))
	require.True(t, lostAt.Before(expiredAt), "LOST %v after the server expired the session", -margin)
}
