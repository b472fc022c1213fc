package nodes_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A PersistentNode, ephemeral and persistent, across a 3-node ensemble's
// members killed in turn, the leader first, while its data is set: each
// time the node is there again with the latest data within a session
// timeout of the ensemble serving again, and after Close nothing is
// left. (3.9 only: Debian's ZooKeeper 3.8.0 loses committed transactions
// when a member rejoins, ZOOKEEPER-4712/-4785.)
func TestPersistentNodeMembersKilled(t *testing.T) {
	if v := os.Getenv(zktest.EnvVersion); v == "" || strings.HasPrefix(v, "3.8") {
		t.Skip("Debian's ZooKeeper 3.8.0 loses committed transactions when members rejoin: run with ZK_TEST_VERSION=3.9")
	}
	zkc := zktest.StartEnsemble(t, 3, zktest.WithTickTime(200*time.Millisecond))
	if v := zkc.Version(); !zkc.Controllable() || strings.HasPrefix(v, "3.6") || strings.HasPrefix(v, "3.7") || strings.HasPrefix(v, "3.8") {
		t.Skipf("needs an ensemble of 3.9 or later this test controls (%s)", v)
	}
	ctx := context.Background()
	const session = 4 * time.Second
	a := connect(t, zkc.Servers(), recipes.WithSessionTimeout(session))
	b := connect(t, zkc.Servers(), recipes.WithSessionTimeout(session))
	eph, _ := start(t, a, "/members/eph", nodes.Ephemeral, []byte("v0"))
	per, _ := start(t, a, "/members/per", nodes.Persistent, []byte("v0"))
	waitCreated(t, eph)
	waitCreated(t, per)

	holds := func(want string) bool {
		for _, p := range []string{"/members/eph", "/members/per"} {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			d, _, err := b.Get(rctx, p)
			cancel()
			if err != nil || string(d) != want {
				return false
			}
		}
		return true
	}
	sid := a.SessionID()
	killed := map[int]bool{}
	for round := range 3 {
		leader, err := zkc.Leader()
		require.NoError(t, err)
		victim := leader // the leader first, then each other member once
		for killed[victim] {
			victim = (victim + 1) % 3
		}
		killed[victim] = true
		require.NoError(t, zkc.Kill(victim))
		kill := time.Now()
		want := fmt.Sprintf("v%d", round+1)
		// Set while the ensemble elects: recorded at once, written when it
		// can be (the ctx may end first; the write goes on).
		for _, n := range []*nodes.PersistentNode{eph, per} {
			sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_ = n.SetData(sctx, []byte(want))
			cancel()
		}
		// The ensemble serves again (a read by b succeeds), then the node
		// must hold the latest data within a session timeout.
		var serving time.Time
		zktest.Eventually(t, 30*time.Second, "the ensemble serves again", func() bool {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if err := b.Sync(rctx, "/"); err != nil {
				return false
			}
			serving = time.Now()
			return true
		})
		zktest.Eventually(t, session, fmt.Sprintf("round %d: both nodes hold %s", round, want), func() bool { return holds(want) })
		t.Logf("round %d: member %d killed (leader %d); serving again after %s, both nodes held %s %s after that; the ephemeral node's session: %s",
			round, victim, leader, serving.Sub(kill).Round(time.Millisecond), want, time.Since(serving).Round(time.Millisecond),
			map[bool]string{true: "the same", false: "a new one"}[ownerIs(t, b, "/members/eph", sid)])
		sid = a.SessionID()
		require.NoError(t, zkc.Restart(victim))
	}
	require.NoError(t, eph.Close(ctx))
	require.NoError(t, per.Close(ctx))
	for _, p := range []string{"/members/eph", "/members/per"} {
		_, _, ok := dataAt(t, b, p)
		assert.False(t, ok, "%s is left after Close", p)
	}
}

// ownerIs says whether the ephemeral node at path belongs to session sid.
func ownerIs(t *testing.T, c *recipes.Client, path string, sid int64) bool {
	_, st, ok := dataAt(t, c, path)
	return ok && st.EphemeralOwner == sid
}
