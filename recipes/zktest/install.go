package zktest

// Finding a local ZooKeeper installation and its class path.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// installation is a local ZooKeeper that can be run as child processes.
type installation struct {
	java      string
	classpath string
}

// findLocal locates java and the ZooKeeper jars: $ZOOKEEPER_HOME if set,
// else Debian's /usr/share/java.
func findLocal() (*installation, error) {
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	if home := os.Getenv(EnvZooKeeperHome); home != "" {
		cp, err := homeClasspath(home)
		if err != nil {
			return nil, err
		}
		return &installation{java: java, classpath: cp}, nil
	}
	zkDir := debianJavaDir
	switch want := requestedVersion(); {
	case want == "" || versionMatches("3.8.0", want):
		// Debian 12's own package (3.8.0).
	case versionMatches("3.9", want) || strings.HasPrefix(want, "3.9."):
		zkDir = sidJavaDir()
		if _, err := os.Stat(filepath.Join(zkDir, "zookeeper.jar")); err != nil {
			return nil, fmt.Errorf("%s=%s: no ZooKeeper 3.9 unpacked in %s (run scripts/install-deps.sh zk39, "+
				"or set %s to an Apache ZooKeeper 3.9 release): %w", EnvVersion, want, DebianSidDir(), EnvZooKeeperHome, err)
		}
	case versionMatches("3.4", want) || strings.HasPrefix(want, "3.4."):
		return bullseyeInstallation(java, want)
	default:
		return nil, fmt.Errorf("%s=%s: only 3.8 (Debian's package), 3.9 (scripts/install-deps.sh zk39) and 3.4 (zk34) "+
			"are known; set %s to an Apache release of another version", EnvVersion, want, EnvZooKeeperHome)
	}
	cp, err := debianClasspath(zkDir, debianJavaDir)
	if err != nil {
		return nil, err
	}
	return &installation{java: java, classpath: cp}, nil
}

// bullseyeInstallation is Debian 11's ZooKeeper 3.4.13 as `install-deps.sh
// zk34` unpacks it: jute is inside zookeeper.jar in 3.4; QuorumPeerMain
// registers log4j 1.2's JMX beans, so log4j-1.2.jar is needed even though
// the server logs through slf4j (to slf4j-simple, as the other servers).
func bullseyeInstallation(java, want string) (*installation, error) {
	dir := bullseyeJavaDir()
	var cp []string
	for _, j := range []string{"zookeeper.jar", "log4j-1.2.jar", "slf4j-api.jar", "slf4j-simple.jar"} {
		p := filepath.Join(dir, j)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s=%s: no ZooKeeper 3.4 unpacked in %s (run scripts/install-deps.sh zk34, "+
				"or set %s to an Apache ZooKeeper 3.4 release): %w", EnvVersion, want, DebianBullseyeDir(), EnvZooKeeperHome, err)
		}
		cp = append(cp, p)
	}
	return &installation{java: java, classpath: strings.Join(cp, string(os.PathListSeparator))}, nil
}

func findJava() (string, error) {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		p := filepath.Join(jh, "bin", "java")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("no java found (set JAVA_HOME or put java on PATH): %w", err)
	}
	return p, nil
}

// homeClasspath builds the class path of an unpacked Apache ZooKeeper
// release: its conf directory (for the logging configuration), lib/*.jar and
// *.jar, the zookeeper-jute jars first (see juteFirst).
func homeClasspath(home string) (string, error) {
	var cp []string
	if st, err := os.Stat(filepath.Join(home, "conf")); err == nil && st.IsDir() {
		cp = append(cp, filepath.Join(home, "conf"))
	}
	found := false
	for _, pattern := range []string{filepath.Join(home, "lib", "*.jar"), filepath.Join(home, "*.jar")} {
		jars, _ := filepath.Glob(pattern)
		for _, j := range jars {
			if strings.HasPrefix(filepath.Base(j), "zookeeper-") || filepath.Base(j) == "zookeeper.jar" {
				found = true
			}
		}
		cp = append(cp, jars...)
	}
	if !found {
		return "", fmt.Errorf("%s=%s holds no zookeeper jar in lib/ or at its top", EnvZooKeeperHome, home)
	}
	return strings.Join(juteFirst(cp), string(os.PathListSeparator)), nil
}

// juteFirst moves the zookeeper-jute jars ahead of everything else, keeping
// the order otherwise. A Debian-built zookeeper jar's manifest Class-Path
// names /usr/share/java/zookeeper-jute.jar, which on Debian 12 is 3.8.0's;
// the JVM puts manifest entries right after the jar that names them, so
// unless the matching jute jar comes first a newer server loads 3.8.0's
// classes and dies with NoSuchMethodError (StatPersisted.copyFrom). A glob
// sorts "zookeeper-3.9.6.jar" before "zookeeper-jute-3.9.6.jar".
func juteFirst(cp []string) []string {
	var jute, rest []string
	for _, p := range cp {
		if strings.HasPrefix(filepath.Base(p), "zookeeper-jute") {
			jute = append(jute, p)
		} else {
			rest = append(rest, p)
		}
	}
	return append(jute, rest...)
}

// debianClasspath builds the class path from Debian's jars: ZooKeeper's own
// (zookeeper-jute before zookeeper, see juteFirst) from zkDir, the libraries
// it needs from libDir. zkDir is libDir for Debian 12's package, the
// unpacked unstable tree for ZooKeeper 3.9.
func debianClasspath(zkDir, libDir string) (string, error) {
	exists := func(dir, name string) bool {
		st, err := os.Stat(filepath.Join(dir, name))
		return err == nil && !st.IsDir()
	}
	var cp []string
	for _, j := range []struct{ dir, name string }{
		{zkDir, "zookeeper-jute.jar"}, {zkDir, "zookeeper.jar"}, {libDir, "slf4j-api.jar"},
	} {
		if !exists(j.dir, j.name) {
			return "", fmt.Errorf("no local ZooKeeper: %s not found", filepath.Join(j.dir, j.name))
		}
		cp = append(cp, filepath.Join(j.dir, j.name))
	}
	dir := libDir
	exists1 := func(name string) bool { return exists(dir, name) }
	// slf4j-simple logs INFO to stderr, which goes to the member's log file
	// (LogContains depends on it); slf4j-nop is the quiet fallback.
	for _, b := range []string{"slf4j-simple.jar", "slf4j-nop.jar"} {
		if exists1(b) {
			cp = append(cp, filepath.Join(dir, b))
			break
		}
	}
	for _, j := range []string{
		"netty-handler.jar", "netty-common.jar", "netty-buffer.jar", "netty-transport.jar",
		"netty-codec.jar", "netty-resolver.jar", "netty-transport-native-epoll.jar",
		"netty-transport-native-unix-common.jar", "metrics-core.jar", "commons-cli.jar",
		"snappy-java.jar",
	} {
		if exists1(j) {
			cp = append(cp, filepath.Join(dir, j))
		}
	}
	return strings.Join(cp, string(os.PathListSeparator)), nil
}
