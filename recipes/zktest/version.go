package zktest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Environment variables that choose the server's version.
const (
	// EnvVersion asks for a ZooKeeper release line, "3.8", "3.9" or
	// "3.4". With "3.9" the local backend runs the tree that
	// `scripts/install-deps.sh zk39` unpacked from Debian's unstable suite
	// (see EnvDebianSidDir) instead of /usr/share/java's, with "3.4" the
	// one `install-deps.sh zk34` unpacked from Debian 11 (see
	// EnvDebianBullseyeDir); with any value the server that answers
	// (local, ZOOKEEPER_HOME, ZK_TEST_SERVERS or a container) must report
	// that version, or Launch fails. Unset: whatever server is found.
	EnvVersion = "ZK_TEST_VERSION"
	// EnvDebianSidDir is where install-deps.sh unpacked Debian unstable's
	// packages (its root/ holds usr/share/java/zookeeper.jar); default
	// ${XDG_CACHE_HOME:-$HOME/.cache}/zkrecipes/debian-sid.
	EnvDebianSidDir = "ZK_DEBIAN_SID_DIR"
	// EnvDebianBullseyeDir is where `scripts/install-deps.sh zk34`
	// unpacked Debian 11's ZooKeeper 3.4.13 (its root/ holds
	// usr/share/java/zookeeper.jar), which the local backend runs with
	// ZK_TEST_VERSION=3.4; default
	// ${XDG_CACHE_HOME:-$HOME/.cache}/zkrecipes/debian-bullseye.
	EnvDebianBullseyeDir = "ZK_DEBIAN_BULLSEYE_DIR"
)

// requestedVersion returns ZK_TEST_VERSION, trimmed, or "".
func requestedVersion() string { return strings.TrimSpace(os.Getenv(EnvVersion)) }

// DebianSidDir returns the directory install-deps.sh unpacks Debian
// unstable's ZooKeeper, Curator and Kazoo into: $ZK_DEBIAN_SID_DIR, else
// $XDG_CACHE_HOME/zkrecipes/debian-sid, else ~/.cache/zkrecipes/debian-sid.
func DebianSidDir() string { return cacheDir(EnvDebianSidDir, "debian-sid") }

// DebianBullseyeDir returns the directory `install-deps.sh zk34` unpacks
// Debian 11's ZooKeeper 3.4.13 into (its jars in root/usr/share/java):
// $ZK_DEBIAN_BULLSEYE_DIR, else
// $XDG_CACHE_HOME/zkrecipes/debian-bullseye, else
// ~/.cache/zkrecipes/debian-bullseye.
func DebianBullseyeDir() string { return cacheDir(EnvDebianBullseyeDir, "debian-bullseye") }

// cacheDir is $env, else the cache directory's zkrecipes/name.
func cacheDir(env, name string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "zkrecipes", name)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "zkrecipes", name)
}

// bullseyeJavaDir is the unpacked 3.4 tree's jar directory.
func bullseyeJavaDir() string {
	d := DebianBullseyeDir()
	if d == "" {
		return ""
	}
	return filepath.Join(d, "root", "usr", "share", "java")
}

// sidJavaDir is the unpacked tree's jar directory.
func sidJavaDir() string {
	d := DebianSidDir()
	if d == "" {
		return ""
	}
	return filepath.Join(d, "root", "usr", "share", "java")
}

// versionMatches reports whether version (e.g. "3.9.6") belongs to the
// release line want (e.g. "3.9", or "3.9.6" itself).
func versionMatches(version, want string) bool {
	return version == want || strings.HasPrefix(version, want+".")
}

// parseServerVersion takes the release out of srvr's first line,
// "Zookeeper version: 3.9.6-2, built on ..." → "3.9.6".
func parseServerVersion(srvr string) (string, bool) {
	v, ok := parseKV(srvr, "Zookeeper version", ':')
	if !ok || v == "" {
		return "", false
	}
	if i := strings.IndexAny(v, "-, "); i > 0 {
		v = v[:i]
	}
	return v, true
}

// ServerVersion returns the ZooKeeper release member i runs ("3.9.6"),
// from its "srvr" reply.
func (c *Cluster) ServerVersion(i int) (string, error) {
	out, err := c.FourLetter(i, "srvr")
	if err != nil {
		return "", err
	}
	v, ok := parseServerVersion(out)
	if !ok {
		return "", fmt.Errorf("zktest: no version in the srvr reply of member %d: %q", i, out)
	}
	return v, nil
}

// Version returns the ZooKeeper release the cluster runs ("3.9.6"), asked
// once when it was launched, or "unknown" if no member told.
func (c *Cluster) Version() string {
	if c.version == "" {
		return "unknown"
	}
	return c.version
}

// learnVersion asks the members for their release and checks it against
// ZK_TEST_VERSION. Servers this package started answer "srvr" already (it
// is how Launch knew they serve); a cluster named by ZK_TEST_SERVERS may
// not allow it, and then the version is only waited for when one was
// requested.
func (c *Cluster) learnVersion() error {
	want := requestedVersion()
	var errs []error
	deadline := time.Now().Add(10 * time.Second)
	for {
		for i := range c.servers {
			v, err := c.ServerVersion(i)
			if err == nil {
				c.version = v
				break
			}
			errs = append(errs, err)
		}
		if c.version != "" || want == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if want == "" {
		return nil // the version is only reported
	}
	if c.version == "" {
		return fmt.Errorf("zktest: %s=%s, but no member reported its version: %w", EnvVersion, want, errors.Join(errs...))
	}
	if !versionMatches(c.version, want) {
		return fmt.Errorf("zktest: %s=%s, but the server runs ZooKeeper %s", EnvVersion, want, c.version)
	}
	return nil
}
