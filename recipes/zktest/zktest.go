package zktest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/zktest/internal/launcher"
)

// ErrNotControllable is returned (wrapped) by Kill, Restart, Pause and Resume
// on a Cluster whose server processes this package did not start: an
// ensemble named by ZK_TEST_SERVERS, or a server running in a container
// (package zkdocker).
// Tests that inject faults should check Controllable and skip otherwise.
var ErrNotControllable = errors.New("zktest: cluster is not controllable")

// ErrUnavailable is returned (wrapped) by Launch when no ZooKeeper could be
// found: ZK_TEST_SERVERS is unset, no local installation exists, and either
// package zkdocker is not imported or no Docker engine answers. Start and
// StartEnsemble fail the test instead.
var ErrUnavailable = errors.New("zktest: no ZooKeeper available")

// DefaultTickTime is the tickTime of servers this package starts unless
// WithTickTime says otherwise. The server's minimum session timeout is two
// ticks and its maximum twenty ticks, so with the default a client gets a
// session timeout between 400ms and 4s.
const DefaultTickTime = 200 * time.Millisecond

// Environment variables read by this package.
const (
	// EnvServers names an existing ensemble ("host:port,host:port") to use
	// instead of starting one.
	EnvServers = "ZK_TEST_SERVERS"
	// EnvZooKeeperHome points at an unpacked Apache ZooKeeper release whose
	// jars (lib/*.jar and *.jar) are used instead of Debian's.
	EnvZooKeeperHome = "ZOOKEEPER_HOME"
)

// dockerPackage is the package that lets Launch start a server in Docker.
const dockerPackage = "github.com/zkrecipes/zkrecipes/recipes/zktest/zkdocker"

// logTailLines is how many lines of each server log are reported through
// t.Log when a test using the cluster fails.
const logTailLines = 100

type config struct {
	tick       time.Duration
	logOut     io.Writer
	noExtended bool
	heapMB     int // WithHeap; 0: 256
	tls        int // tlsFromEnv, tlsOn or tlsOff
	sasl       saslConfig
	reconfig   bool                                                         // WithReconfig (reconfig.go)
	observers  int                                                          // WithObservers (observer.go)
	link       func(observer, voter int, quorumAddr string) (string, error) // WithObserverLinks (observer.go)
}

// Option configures a Cluster started by Start, StartEnsemble or Launch.
// Launch returns an option's error; Start and StartEnsemble fail the test
// with it.
type Option func(*config) error

// WithTickTime sets the servers' tickTime (default DefaultTickTime; d must
// be positive). The minimum session timeout the servers grant is 2*d and
// the maximum 20*d. It has no effect on a cluster named by
// ZK_TEST_SERVERS.
func WithTickTime(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("zktest: tick time %v: must be positive", d)
		}
		c.tick = d
		return nil
	}
}

// WithLogOutput copies the servers' output (stdout and stderr, each line
// prefixed with the member's name) to w as it is produced. By default the
// output is only kept in a private file, which LogContains searches and
// whose last lines are reported through t.Log when the test fails. w may be
// shared by several members; writes to it are serialized.
func WithLogOutput(w io.Writer) Option {
	return func(c *config) error {
		if w == nil {
			return errors.New("zktest: nil log output")
		}
		c.logOut = w
		return nil
	}
}

// WithoutExtendedTypes starts the servers without
// zookeeper.extendedTypesEnabled (by default it is set, for TTL nodes), as a
// server of a default configuration runs: it refuses TTL create modes. It
// has no effect on a cluster named by ZK_TEST_SERVERS or started in Docker.
func WithoutExtendedTypes() Option {
	return func(c *config) error { c.noExtended = true; return nil }
}

// WithHeap sets the maximum Java heap of each local server (-Xmx, in
// MiB; default 256), for tests and benchmarks that keep millions of nodes
// on the server. It has no effect on a cluster named by ZK_TEST_SERVERS
// or started in Docker.
func WithHeap(mb int) Option {
	return func(c *config) error {
		if mb < 16 {
			return fmt.Errorf("zktest: heap %d MiB: want at least 16", mb)
		}
		c.heapMB = mb
		return nil
	}
}

// xmx is the servers' -Xmx argument.
func (c *config) xmx() string {
	if c.heapMB > 0 {
		return "-Xmx" + strconv.Itoa(c.heapMB) + "m"
	}
	return "-Xmx256m"
}

type mode int

const (
	modeExternal mode = iota
	modeLocal
	modeContainer
)

func (m mode) String() string {
	switch m {
	case modeExternal:
		return EnvServers
	case modeLocal:
		return "local"
	case modeContainer:
		return "container"
	}
	return "?"
}

// Cluster is a ZooKeeper server or ensemble for tests. It is safe for
// concurrent use. Member i (0-based) has client address Servers()[i]; its
// ZooKeeper server id (myid) is i+1.
type Cluster struct {
	mode    mode
	servers []string
	tick    time.Duration

	local *localCluster   // modeLocal
	tls   *clusterTLS     // nil: plain
	ctr   launcher.Server // modeContainer, started by zkdocker

	version string // the release the servers report, set by Launch

	closeOnce sync.Once
	closeErr  error
}

// Start starts a standalone ZooKeeper server for the test (see the package
// documentation for where it comes from) and registers a t.Cleanup that stops
// it and removes its files, also when the test fails. If no server can be
// had, Start fails the test with t.Fatal. When the test has failed, the
// cleanup first logs the last lines of the server's log.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	return StartEnsemble(t, 1, opts...)
}

// StartEnsemble starts an n-member ZooKeeper ensemble (a quorum of n
// servers; n == 1 is a standalone server) for the test, waits until every
// member serves and one of them leads, and registers a t.Cleanup that stops
// it, as Start does. An ensemble of more than one member needs a local
// installation (or ZK_TEST_SERVERS, in which case n is not checked against
// the size of the named ensemble).
func StartEnsemble(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c, err := Launch(n, opts...)
	if err != nil {
		t.Fatalf("zktest: %v", err)
		return nil
	}
	t.Logf("zktest: ZooKeeper %s, %d member(s) at %s (%s)", c.Version(), c.Len(), c.ConnectString(), c.mode)
	t.Cleanup(func() {
		if t.Failed() {
			c.logTails(t)
		}
		if err := c.Close(); err != nil {
			t.Errorf("zktest: closing cluster: %v", err)
		}
	})
	return c
}

// Launch starts an n-member ensemble (n == 1: a standalone server) outside
// of a test, for example for a demo program, following the same discovery
// order as StartEnsemble. The caller must call Close. When no ZooKeeper can
// be found the error wraps ErrUnavailable.
func Launch(n int, opts ...Option) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("zktest: ensemble size %d: need at least 1 member", n)
	}
	cfg := config{tick: DefaultTickTime}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("zktest: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}

	if err := cfg.plainForReconfig(); err != nil {
		return nil, err
	}
	c, err := launch(n+cfg.observers, cfg)
	if err != nil {
		return nil, err
	}
	if err := c.learnVersion(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func launch(n int, cfg config) (*Cluster, error) {
	if env := strings.TrimSpace(os.Getenv(EnvServers)); env != "" {
		if err := errors.Join(cfg.sasl.check(modeExternal), cfg.checkObservers(modeExternal)); err != nil {
			return nil, err
		}
		if cfg.wantTLS() {
			return nil, fmt.Errorf("zktest: a TLS-only cluster (WithTLS or %s) cannot be one named by %s", EnvTLS, EnvServers)
		}
		return launchExternal(env, cfg)
	}

	inst, err := findLocal()
	if err == nil {
		if err := errors.Join(cfg.sasl.check(modeLocal), cfg.checkObservers(modeLocal)); err != nil {
			return nil, err
		}
		lc, err := launchLocal(inst, n, cfg)
		if err != nil {
			return nil, err
		}
		return &Cluster{mode: modeLocal, servers: lc.addrs(), tick: cfg.tick, local: lc, tls: lc.tls}, nil
	}
	localErr := err
	if cfg.wantTLS() {
		return nil, fmt.Errorf("%w: a TLS-only cluster (WithTLS or %s) needs a local installation: %w", ErrUnavailable, EnvTLS, localErr)
	}

	l := launcher.Registered()
	if l != nil && l.Available() {
		if n > 1 {
			return nil, fmt.Errorf("zktest: an ensemble of %d members needs a local ZooKeeper installation "+
				"(apt-get install zookeeper, or set %s); with Docker only a standalone server is started: %w",
				n, EnvZooKeeperHome, ErrUnavailable)
		}
		if err := errors.Join(cfg.sasl.check(modeContainer), cfg.checkObservers(modeContainer)); err != nil {
			return nil, err
		}
		return launchContainer(l, cfg)
	}

	docker := fmt.Sprintf("import _ %q in a test file and run a Docker engine "+
		"(DOCKER_HOST names one off the default socket) to start the official zookeeper image "+
		"in a container (ZK_TEST_IMAGE chooses the image)", dockerPackage)
	if l != nil {
		docker = l.Unavailable()
	}
	return nil, fmt.Errorf("%w (%v): install ZooKeeper (apt-get install zookeeper), "+
		"or set %s to an unpacked Apache ZooKeeper release, "+
		"or set %s=host:port[,host:port...] to use a running ensemble, "+
		"or %s",
		ErrUnavailable, localErr, EnvZooKeeperHome, EnvServers, docker)
}

// launchContainer starts a standalone server through l (zkdocker's
// container) and waits until it serves.
func launchContainer(l launcher.Launcher, cfg config) (*Cluster, error) {
	srv, err := l.Start(launcher.Spec{TickTime: cfg.tick})
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(startTimeout)
	for {
		out, err := fourLetter(srv.Addr(), "srvr", probeTimeout)
		if err == nil {
			if mode, _ := parseKV(out, "Mode", ':'); mode == "standalone" {
				return &Cluster{mode: modeContainer, servers: []string{srv.Addr()}, tick: cfg.tick, ctr: srv}, nil
			}
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("zktest: the container at %s is not serving after %v; last lines of its log:\n%s",
				srv.Addr(), startTimeout, tail(srv.Log(), 30))
			return nil, errors.Join(err, srv.Close())
		}
		time.Sleep(pollInterval)
	}
}

// launchExternal builds a non-controllable Cluster from ZK_TEST_SERVERS.
func launchExternal(env string, cfg config) (*Cluster, error) {
	var servers []string
	for _, s := range strings.Split(env, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, ":") {
			s += ":2181"
		}
		servers = append(servers, s)
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("zktest: %s=%q names no server", EnvServers, env)
	}
	c := &Cluster{mode: modeExternal, servers: servers, tick: cfg.tick}
	// Make sure something listens, and learn the real tickTime when the
	// server answers "conf" (it may not be on the 4lw whitelist).
	deadline := time.Now().Add(10 * time.Second)
	for {
		for i := range servers {
			out, err := c.FourLetter(i, "conf")
			if err != nil {
				continue
			}
			if v, ok := parseKV(out, "tickTime", '='); ok {
				if ms, ok := atoi(v); ok && ms > 0 {
					c.tick = time.Duration(ms) * time.Millisecond
				}
			}
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("zktest: no server of %s=%q answers", EnvServers, env)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Close stops every server this package started and removes their files.
// It is idempotent. For a cluster named by ZK_TEST_SERVERS it does nothing.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		switch c.mode {
		case modeLocal:
			c.closeErr = c.local.close()
		case modeContainer:
			c.closeErr = c.ctr.Close()
		}
	})
	return c.closeErr
}

// Servers returns the client addresses ("host:port") of the members; index i
// is member i. The slice is a copy.
func (c *Cluster) Servers() []string {
	return append([]string(nil), c.servers...)
}

// ConnectString returns the members' client addresses joined by commas, the
// form ZooKeeper clients accept.
func (c *Cluster) ConnectString() string {
	return strings.Join(c.servers, ",")
}

// Len returns the number of members.
func (c *Cluster) Len() int { return len(c.servers) }

// TickTime returns the servers' tickTime: the configured one for servers
// this package started, the one reported by the "conf" command for a cluster
// named by ZK_TEST_SERVERS (or the configured one if it does not answer).
func (c *Cluster) TickTime() time.Duration { return c.tick }

// Controllable reports whether this package started the server processes
// itself, so that Kill, Restart, Pause and Resume work. It is false for a
// cluster named by ZK_TEST_SERVERS and for a server running in a container.
func (c *Cluster) Controllable() bool { return c.mode == modeLocal }

func (c *Cluster) checkIndex(i int) error {
	if i < 0 || i >= len(c.servers) {
		return fmt.Errorf("zktest: member %d out of range [0,%d)", i, len(c.servers))
	}
	return nil
}

func (c *Cluster) controllable(op string, i int) error {
	if err := c.checkIndex(i); err != nil {
		return err
	}
	if c.mode != modeLocal {
		return fmt.Errorf("zktest: %s member %d: %w", op, i, ErrNotControllable)
	}
	return nil
}

// Kill sends SIGKILL to member i and waits for its process to exit. Killing
// a member that is not running does nothing. The member's data directory is
// kept, so Restart brings it back with its state.
func (c *Cluster) Kill(i int) error {
	if err := c.controllable("kill", i); err != nil {
		return err
	}
	return c.local.kill(i)
}

// Stop stops member i gracefully (SIGTERM, as a service manager stops a
// server: it closes its client connections and its logs) and waits for
// it to exit; Restart starts it again. Stopping a member that is not
// running is fine.
func (c *Cluster) Stop(i int) error {
	if err := c.controllable("stop", i); err != nil {
		return err
	}
	return c.local.stop(i)
}

// Restart starts member i again after Kill or Stop, with the same data directory and
// ports, and waits until it serves requests (for an ensemble member: until it
// has joined a quorum as leader or follower). It fails if the member is
// running.
func (c *Cluster) Restart(i int) error {
	if err := c.controllable("restart", i); err != nil {
		return err
	}
	return c.local.restart(i)
}

// Pause stops member i with SIGSTOP: its process stays alive and its sockets
// stay open, but it answers nothing, like a server stuck in a long GC pause
// or on a frozen machine; every thread of it has stopped when Pause
// returns (on Linux; elsewhere the signal has been sent). Resume continues
// it.
func (c *Cluster) Pause(i int) error {
	if err := c.controllable("pause", i); err != nil {
		return err
	}
	return c.local.pause(i)
}

// Resume continues member i after Pause with SIGCONT.
func (c *Cluster) Resume(i int) error {
	if err := c.controllable("resume", i); err != nil {
		return err
	}
	return c.local.resume(i)
}

// leaderWait is how long Leader waits for some member to lead.
const leaderWait = 15 * time.Second

// Leader returns the index of the member that currently leads the ensemble
// ("Mode: leader" in its "srvr" output), or 0 for a standalone server. If no
// member leads (an election is under way), it polls for up to 15 seconds.
// Killed and paused members are not asked.
func (c *Cluster) Leader() (int, error) {
	deadline := time.Now().Add(leaderWait)
	for {
		for i := range c.servers {
			if c.mode == modeLocal && !c.local.answering(i) {
				continue
			}
			switch c.mode4(i, 500*time.Millisecond) {
			case "leader", "standalone":
				return i, nil
			}
		}
		if time.Now().After(deadline) {
			return -1, errors.New("zktest: no member leads")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Eventually polls cond every few milliseconds until it holds, and fails
// the test when it still does not after timeout. Use it to wait for a
// condition on a server (a node gone, a watch set) instead of sleeping.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
