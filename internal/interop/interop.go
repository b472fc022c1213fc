// Package interop lets Go tests drive real Apache Curator (Java) and real
// Kazoo (Python) lock recipes as separate OS processes against the same
// ZooKeeper server as the Go code, to prove the zkrecipes wire layout is
// understood by, and understands, those libraries.
//
// The two driver programs are embedded in this package and written to a
// directory of the caller's choosing at start-up:
//
//   - CuratorRecipes.java, a single-file Java program run with
//     `java -cp <JavaClasspath()> CuratorRecipes.java <mode> <args...>`
//     (Debian's libcurator-recipes-java 5.4 and libzookeeper-java 3.8);
//   - kazoo_recipes.py, run with Debian's /usr/bin/python3 (which has
//     python3-kazoo), never the python3 first on PATH;
//   - CuratorDiscovery.java, one service process of curator-x-discovery
//     (StartCuratorDiscovery; its own protocol, see its head).
//
// StartCuratorWith and StartCuratorDiscoveryWith take java options too:
// ClientTLSProperties reaches a TLS-only ensemble with a client
// certificate (tls_test.go).
//
// Both implement the same modes and line protocol; see the head of each
// file. In short: "mutex <connect> <path> <iterations> <outFile>
// <holdMillis>" prints READY, waits for "GO" on stdin, then records each
// hold as "start end" epoch nanoseconds in outFile (read them with
// ReadIntervals and check them with CheckNoOverlap); "participants
// <connect> <path>" prints the contender nodes in the library's own order;
// "holder <connect> <path>" acquires, prints ACQUIRED, waits for a stdin
// line, releases and prints RELEASED. The Curator program also drives
// InterProcessReadWriteLock ("rwlock", "rwparticipants", "rwholder",
// "rwdowngrade"; Kazoo has no Curator-compatible read/write lock).
// For the cache it runs a CuratorCache that prints its events and, on
// "DUMP", its contents ("cache"), and a plain writer driven line by line
// ("write"); cache_test.go has a Go cache and a Curator one watch the same
// tree while both write it.
//
// # Contender ordering in the three libraries
//
// Curator 5.4 (LockInternals.getSortedChildren with
// StandardLockInternalsDriver.standardFixForSorting) takes EVERY child of
// the lock path, without filtering by name, and sorts them by the string
// after the last occurrence of the lock name ("lock-" for a mutex), or by
// the whole name when the lock name does not occur:
//
//	index = str.lastIndexOf(lockName)
//	key   = index >= 0 ? str.substring(index + lockName.length()) : str
//
// Kazoo 2.8 (kazoo/recipe/lock.py, Lock.__init__ and _get_predecessor)
// builds one regular expression from its own node name and the
// extra_lock_patterns, joined UNESCAPED (they are regular expressions):
//
//	self._contenders_re = re.compile(
//	    r"(?:{patterns})(-?\d{{10}})$".format(
//	        patterns="|".join(self._exclude_names)
//	    )
//	)
//	...
//	match = self._contenders_re.search(child)
//	...
//	for match in sorted(contender_matches, key=lambda m: m.groups()):
//
// so a child is a contender iff some pattern is immediately followed by
// an optional "-" and exactly ten digits that end the name (re.search: the
// pattern may start anywhere), children that match no pattern are ignored,
// and contenders are sorted by the captured "-?\d{10}" text compared as a
// string (Python's sort is stable, so ties keep get_children order).
// Kazoo's own mutex nodes are "<32 hex>__lock__<seq>"; _exclude_names is
// {"__lock__"} plus the extra patterns (WriteLock adds "__rlock__").
//
// With extra_lock_patterns=("-lock-",), Kazoo and Curator give the same key
// (the 10-digit sequence) to a "_c_<uuid>-lock-<seq>" node, because the
// dashed UUID holds only hex digits and dashes and so cannot contain
// "lock-". The Go library should therefore sort an accepted foreign
// contender by its trailing "-?\d{10}" (the Kazoo rule) and its own nodes by
// the text after the last "lock-" (the Curator rule): both give the
// sequence. Go+Curator queues are safe, and so are Go+Kazoo queues when
// Kazoo is given the "-lock-" pattern and Go the "__lock__" one. Curator
// and Kazoo must not share a queue: Curator does NOT ignore Kazoo's
// "<hex>__lock__<seq>" nodes, it counts them as contenders but keys them by
// their whole name, which sorts after every 10-digit key unless the hex
// starts with nine zeros, so a Curator contender never waits for a Kazoo
// one and both hold at once (TestCuratorKazooMixIsUnsafe shows it).
package interop

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

//go:embed CuratorRecipes.java
var curatorSource []byte

//go:embed kazoo_recipes.py
var kazooSource []byte

//go:embed CuratorDiscovery.java
var curatorDiscoverySource []byte

// CuratorDiscoverySourceName is the file name StartCuratorDiscovery writes
// its embedded Java program under.
const CuratorDiscoverySourceName = "CuratorDiscovery.java"

// CuratorDiscoveryPayloadClass is the Java class of CuratorDiscovery.java's
// typed payload, as Jackson names it in "@class".
const CuratorDiscoveryPayloadClass = "CuratorDiscovery$Details"

// CuratorDiscoveryOtherClass is the Java class of the payloads
// CuratorDiscovery.java's REGISTEROTHER writes: another class, which its
// discovery typed on CuratorDiscoveryPayloadClass refuses.
const CuratorDiscoveryOtherClass = "CuratorDiscovery$Other"

// CuratorSourceName is the file name StartCurator writes the embedded Java
// program under; a single-file source program's name must match its class.
const CuratorSourceName = "CuratorRecipes.java"

// KazooSourceName is the file name StartKazoo writes the embedded Python
// program under.
const KazooSourceName = "kazoo_recipes.py"

// Python is the interpreter that has Debian's python3-kazoo. It is used by
// absolute path on purpose: a python3 earlier on PATH (pyenv, venv) lacks
// Kazoo.
const Python = "/usr/bin/python3"

// JavaDir is where Debian installs the Curator and ZooKeeper jars.
const JavaDir = "/usr/share/java"

// ClasspathEnv names the environment variable that, when set, replaces the
// class path JavaClasspath builds from JavaDir.
const ClasspathEnv = "CURATOR_CLASSPATH"

// JVMFlags are the java options StartCurator passes to keep JVM start-up
// and footprint small.
var JVMFlags = []string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"}

// javaJars lists the jars (in JavaDir) Curator 5.4 needs, with the Debian
// package that ships each. Debian's guava bundles failureaccess's class, so
// no failureaccess.jar is needed. The ZooKeeper client only needs
// zookeeper, zookeeper-jute and slf4j; the netty, metrics, commons-cli and
// snappy jars are the rest of the server's class path and are listed so the
// same class path also starts a server.
var javaJars = []struct{ jar, pkg string }{
	{"curator-recipes.jar", "libcurator-recipes-java"},
	{"curator-x-discovery.jar", "libcurator-discovery-java"},
	{"jackson-databind.jar", "libjackson2-databind-java"},
	{"jackson-core.jar", "libjackson2-core-java"},
	{"jackson-annotations.jar", "libjackson2-annotations-java"},
	{"curator-framework.jar", "libcurator-framework-java"},
	{"curator-client.jar", "libcurator-client-java"},
	{"guava.jar", "libguava-java"},
	{"slf4j-api.jar", "libslf4j-java"},
	{"slf4j-nop.jar", "libslf4j-java"},
	{"zookeeper.jar", "libzookeeper-java"},
	{"zookeeper-jute.jar", "libzookeeper-java"},
	{"netty-handler.jar", "libnetty-java"},
	{"netty-common.jar", "libnetty-java"},
	{"netty-buffer.jar", "libnetty-java"},
	{"netty-transport.jar", "libnetty-java"},
	{"netty-codec.jar", "libnetty-java"},
	{"netty-resolver.jar", "libnetty-java"},
	{"netty-transport-native-epoll.jar", "libnetty-java"},
	{"netty-transport-native-unix-common.jar", "libnetty-java"},
	{"metrics-core.jar", "libdropwizard-metrics-java"},
	{"commons-cli.jar", "libcommons-cli-java"},
	{"snappy-java.jar", "libsnappy-java"},
}

// ErrUnavailable is wrapped by the errors JavaClasspath, KazooAvailable,
// StartCurator and StartKazoo return when a required tool or package is
// missing, so tests can skip with errors.Is.
var ErrUnavailable = errors.New("interop: dependency unavailable")

// JavaClasspath returns the class path for CuratorRecipes.java: Curator,
// Guava, SLF4J (with the no-op binding) and ZooKeeper's jars from
// /usr/share/java, or the value of CURATOR_CLASSPATH when that is set. A
// missing jar yields an error wrapping ErrUnavailable that names the Debian
// package to install.
func JavaClasspath() (string, error) {
	if cp := os.Getenv(ClasspathEnv); cp != "" {
		return cp, nil
	}
	parts := make([]string, 0, len(javaJars))
	var missing []string
	for _, j := range javaJars {
		p := filepath.Join(JavaDir, j.jar)
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, fmt.Sprintf("%s (apt-get install %s)", p, j.pkg))
			continue
		}
		parts = append(parts, p)
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%w: missing %s; or set %s", ErrUnavailable, strings.Join(missing, ", "), ClasspathEnv)
	}
	return strings.Join(parts, string(os.PathListSeparator)), nil
}

// javaBinary returns $JAVA_HOME/bin/java when JAVA_HOME is set, else java
// from PATH.
func javaBinary() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		p := filepath.Join(h, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: no java 11+ on PATH (apt-get install openjdk-17-jre-headless): %w", ErrUnavailable, err)
	}
	return p, nil
}

// kazooImport imports kazoo as kazoo_recipes.py does: from
// ZKRECIPES_KAZOO_PATH when it is set (Debian unstable's Kazoo 2.11, see
// scripts/zk39-env.sh), else the system's python3-kazoo.
const kazooImport = `import os, sys
if os.environ.get("ZKRECIPES_KAZOO_PATH"): sys.path.insert(0, os.environ["ZKRECIPES_KAZOO_PATH"])
import kazoo`

// KazooAvailable reports whether /usr/bin/python3 can import kazoo; the
// error wraps ErrUnavailable and names the python3-kazoo package.
func KazooAvailable() error {
	out, err := exec.Command(Python, "-I", "-c", kazooImport).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s cannot import kazoo (apt-get install python3-kazoo): %w: %s",
			ErrUnavailable, Python, err, bytes.TrimSpace(out))
	}
	return nil
}

// StartCurator writes CuratorRecipes.java into dir and starts
// `java <JVMFlags> -cp <JavaClasspath()> CuratorRecipes.java args...`. The
// process is killed (with its process group) when ctx is done.
func StartCurator(ctx context.Context, dir string, args ...string) (*Proc, error) {
	return startJava(ctx, "curator", dir, CuratorSourceName, curatorSource, nil, args)
}

// StartCuratorDiscovery writes CuratorDiscovery.java into dir and starts
// it with args as StartCurator starts CuratorRecipes.java (see the
// program's doc for its arguments and commands).
func StartCuratorDiscovery(ctx context.Context, dir string, args ...string) (*Proc, error) {
	return startJava(ctx, "curator-discovery", dir, CuratorDiscoverySourceName, curatorDiscoverySource, nil, args)
}

// startJava writes source into dir as name and starts `java <JVMFlags>
// <props> -cp <JavaClasspath()> name args...`.
func startJava(ctx context.Context, kind, dir, name string, source []byte, props, args []string) (*Proc, error) {
	cp, err := JavaClasspath()
	if err != nil {
		return nil, err
	}
	java, err := javaBinary()
	if err != nil {
		return nil, err
	}
	src := filepath.Join(dir, name)
	if err := writeIfChanged(src, source); err != nil {
		return nil, err
	}
	argv := append(append(append([]string{}, JVMFlags...), props...), "-cp", cp, src)
	argv = append(argv, args...)
	return start(ctx, kind, java, argv)
}

// StartKazoo writes kazoo_recipes.py into dir and starts
// `/usr/bin/python3 -I -u kazoo_recipes.py args...`. The process is killed
// (with its process group) when ctx is done. Kazoo's extra lock patterns
// come from KAZOO_EXTRA_LOCK_PATTERNS in this process's environment
// (default "-lock-"; see kazoo_recipes.py).
func StartKazoo(ctx context.Context, dir string, args ...string) (*Proc, error) {
	if _, err := os.Stat(Python); err != nil {
		return nil, fmt.Errorf("%w: %s (apt-get install python3-kazoo): %w", ErrUnavailable, Python, err)
	}
	src := filepath.Join(dir, KazooSourceName)
	if err := writeIfChanged(src, kazooSource); err != nil {
		return nil, err
	}
	argv := append([]string{"-I", "-u", src}, args...)
	return start(ctx, "kazoo", Python, argv)
}

var writeMu sync.Mutex

// writeIfChanged writes data to path unless it already holds exactly data,
// so concurrent starts sharing a directory do not rewrite a file another
// process is reading.
func writeIfChanged(path string, data []byte) error {
	writeMu.Lock()
	defer writeMu.Unlock()
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("interop: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("interop: rename %s: %w", tmp, err)
	}
	return nil
}

// stderrTail is how many bytes of stderr Proc keeps for error messages.
const stderrTail = 8 << 10
