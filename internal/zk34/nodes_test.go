package zk34_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// TestZK34NodesStop: a PersistentNode (container parent), a
// PersistentTTLNode and a GroupMember that 3.4 cannot make do not keep
// trying in the background: a TTL create costs the connection on 3.4, and
// each reconnection would bring the next attempt. The node logs the
// refusal at error level and waits for its data to be set.
func TestZK34NodesStop(t *testing.T) {
	zkc := testutil.StartZK34(t)
	type keeper interface {
		Start(context.Context) error
		WaitReady(context.Context) error
		Close(context.Context) error
	}
	for _, tc := range []struct {
		name string
		make func(c *recipes.Client) (keeper, error)
	}{
		{"persistent_node", func(c *recipes.Client) (keeper, error) {
			return nodes.NewPersistentNode(c, "/n/pnode/x", nodes.Ephemeral, nil)
		}},
		{"ttl_node", func(c *recipes.Client) (keeper, error) {
			return nodes.NewPersistentTTLNode(c, "/n/ttl", time.Minute, nil)
		}},
		{"group_member", func(c *recipes.Client) (keeper, error) {
			return nodes.NewGroupMember(c, "/n/group", "a", nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testutil.LogBuffer
			c := testutil.Connect(t, zkc.Servers(), recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			n, err := tc.make(c)
			require.NoError(t, err)
			require.NoError(t, n.Start(ctx))
			defer n.Close(context.Background())
			err = n.WaitReady(ctx)
			require.ErrorIs(t, err, recipes.ErrUnimplemented)
			require.ErrorContains(t, err, "3.5.3")
			// (A group member's cache asks for a persistent watch first, and
			// 3.4 closes the connection: a connection loss is tried again.)
			retried := func() bool {
				for _, l := range strings.Split(logs.String(), "\n") {
					if strings.Contains(l, "failed; trying again") && strings.Contains(l, "not implemented") {
						return true
					}
				}
				return false
			}
			testutil.Eventually(t, 10*time.Second, "the background loop's verdict logged", func() bool {
				return strings.Contains(logs.String(), "cannot make a node of ours") || retried()
			})
			require.False(t, retried(), "no retry loop: %s", logs.String())
			require.Equal(t, 1, logs.Count("cannot make a node of ours"), "%s", logs.String())
		})
	}
}
