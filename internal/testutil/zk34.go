package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// StartZK34 starts a standalone ZooKeeper 3.4.13 for test t, from the tree
// `scripts/install-deps.sh zk34` unpacks from Debian 11 (see
// zktest.DebianBullseyeDir), whatever ZK_TEST_VERSION says for the other
// tests: a plain server (3.4 has no TLS), started by the local backend
// (ZOOKEEPER_HOME and ZK_TEST_SERVERS are set aside for the test). Without
// the tree it skips the test, or fails it when CI is true.
func StartZK34(t *testing.T) *zktest.Cluster {
	t.Helper()
	jar := filepath.Join(zktest.DebianBullseyeDir(), "root", "usr", "share", "java", "zookeeper.jar")
	if _, err := os.Stat(jar); err != nil {
		Unavailable(t, fmt.Errorf("no ZooKeeper 3.4 unpacked (run scripts/install-deps.sh zk34): %w", err))
	}
	t.Setenv(zktest.EnvVersion, "3.4")
	t.Setenv(zktest.EnvTLS, "")
	t.Setenv(zktest.EnvZooKeeperHome, "")
	t.Setenv(zktest.EnvServers, "")
	return zktest.Start(t, zktest.WithoutTLS())
}
