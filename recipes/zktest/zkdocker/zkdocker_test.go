package zkdocker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/zktest/zkdocker"
)

// hideLocal makes zktest find neither ZK_TEST_SERVERS nor a local
// installation (ZOOKEEPER_HOME names an empty directory), so that it turns
// to the container.
func hideLocal(t *testing.T) {
	t.Setenv(zktest.EnvServers, "")
	t.Setenv(zktest.EnvZooKeeperHome, t.TempDir())
	t.Setenv(zktest.EnvTLS, "") // a container is a plain server
}

// TestContainerBackend has zktest start the official image through this
// package and uses it. It runs where a Docker engine answers (this
// project's CI machines have none, so there it reports the skip).
func TestContainerBackend(t *testing.T) {
	if !zkdocker.Available() {
		t.Skip("no Docker engine answers: the container backend cannot be exercised here")
	}
	hideLocal(t)
	_, err := zktest.Launch(2)
	require.ErrorIs(t, err, zktest.ErrUnavailable, "an ensemble in Docker")

	c := zktest.Start(t)
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

// TestNoDockerSays checks, where no Docker engine answers, that with this
// package imported zktest's error asks for a Docker engine and names the
// image, instead of asking to import this package.
func TestNoDockerSays(t *testing.T) {
	if zkdocker.Available() {
		t.Skip("a Docker engine answers: TestContainerBackend covers it")
	}
	hideLocal(t)
	t.Setenv(zktest.EnvVersion, "")
	for image, want := range map[string]string{"": `"zookeeper:3.8"`, "zookeeper:3.9.4": `"zookeeper:3.9.4"`} {
		t.Setenv(zkdocker.EnvImage, image)
		_, err := zktest.Launch(1)
		require.ErrorIs(t, err, zktest.ErrUnavailable)
		msg := err.Error()
		require.True(t, strings.Contains(msg, "run a Docker engine") && strings.Contains(msg, want), msg)
		require.NotContains(t, msg, "import _", msg)
	}
}
