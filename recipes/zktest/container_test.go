package zktest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

// TestContainerBackend starts the official image through testcontainers-go
// and uses it. It runs where a Docker engine answers (this project's CI
// machines have none, so there it reports the skip).
func TestContainerBackend(t *testing.T) {
	if !dockerAvailable() {
		t.Skip("no Docker engine answers: the container backend cannot be exercised here")
	}
	cc, err := launchContainer(config{tick: DefaultTickTime})
	require.NoError(t, err)
	c := &Cluster{mode: modeContainer, servers: []string{cc.addr}, tick: DefaultTickTime, ctr: cc}
	defer c.Close()
	require.False(t, c.Controllable())

	conn, events, err := zk.Connect(c.Servers(), 4*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer func() {
		conn.Close()
		for range events {
		}
	}()
	_, err = conn.Create("/container-backend", []byte("ok"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	n, err := c.ZnodeCount(0)
	require.NoError(t, err)
	require.Greater(t, n, 0)
}
