package zktest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// debianJavaDir is where Debian's zookeeper package (and the libraries it
// depends on) puts its jars.
const debianJavaDir = "/usr/share/java"

// mainClass is ZooKeeper's server entry point; it runs a standalone server
// when zoo.cfg names no other server, a quorum peer otherwise.
const mainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// Timeouts of the local backend. A loaded two-core machine running several
// test binaries at once starts three JVMs in a few seconds; the limits are
// generous so that slowness does not turn into failures.
const (
	startTimeout   = 60 * time.Second // all members serving after launch
	restartTimeout = 60 * time.Second // one member serving after Restart
	exitTimeout    = 15 * time.Second // a killed process gone
	pollInterval   = 50 * time.Millisecond
	probeTimeout   = time.Second // one 4lw probe while waiting
)

// member is one server process of a local cluster.
type member struct {
	id                       int // myid, 1-based
	dir                      string
	cfgPath, logPath         string
	clientPort               int
	quorumPort, electionPort int    // ensembles only
	servers                  string // WithReconfig: the server lines of a member added later (reconfig.go)
	observer                 bool   // WithObservers, or AddMember(true) (observer.go)
	proc                     *process
}

func (m *member) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.clientPort)) }

// process is one run of a member's JVM.
type process struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited and been reaped
	paused bool
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// localCluster runs members as child java processes.
type localCluster struct {
	inst   *installation
	cfg    config
	root   string
	logOut *lockedWriter // nil unless WithLogOutput
	tls    *clusterTLS   // nil: plain

	mu      sync.Mutex
	members []*member
	closed  bool
	left    map[int]bool // WithReconfig: the members a Reconfig removed, by index
}

func (lc *localCluster) addrs() []string {
	out := make([]string, len(lc.members))
	for i, m := range lc.members {
		out[i] = m.addr()
	}
	return out
}

// errExited reports a member that exited while it was being waited for.
type errExited struct {
	member int
	tail   string
}

func (e *errExited) Error() string {
	return fmt.Sprintf("member %d exited during startup; last lines of its log:\n%s", e.member, e.tail)
}

// launchLocal starts n members and waits until they serve. A member that
// exits during startup (most likely because another process took one of its
// ports between probing and binding) makes it try once more with new ports.
func launchLocal(inst *installation, n int, cfg config) (*localCluster, error) {
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		lc, err := tryLaunchLocal(inst, n, cfg)
		if err == nil {
			return lc, nil
		}
		lastErr = err
		var ex *errExited
		if !errors.As(err, &ex) {
			break
		}
	}
	return nil, fmt.Errorf("zktest: starting local ZooKeeper: %w", lastErr)
}

func tryLaunchLocal(inst *installation, n int, cfg config) (_ *localCluster, err error) {
	removeStaleDirs()
	root, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(root, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	lc := &localCluster{inst: inst, cfg: cfg, root: root}
	if err := lc.writeJAAS(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if cfg.logOut != nil {
		lc.logOut = &lockedWriter{w: cfg.logOut}
	}
	defer func() {
		if err != nil {
			_ = lc.close()
		}
	}()

	perMember := 1
	if n > 1 || cfg.reconfig {
		perMember = 3
	}
	ports, err := freePorts(n * perMember)
	if err != nil {
		return nil, err
	}
	if cfg.wantTLS() {
		if lc.tls, err = newClusterTLS(tlsDir(root)); err != nil {
			return nil, err
		}
	}
	for i := 0; i < n; i++ {
		m := &member{id: i + 1, dir: filepath.Join(root, fmt.Sprintf("zk%d", i+1)), observer: i >= n-cfg.observers}
		m.clientPort = ports[i*perMember]
		if n > 1 || cfg.reconfig {
			m.quorumPort, m.electionPort = ports[i*perMember+1], ports[i*perMember+2]
		}
		m.cfgPath = filepath.Join(m.dir, "zoo.cfg")
		m.logPath = filepath.Join(m.dir, "zookeeper.log")
		lc.members = append(lc.members, m)
	}
	if lc.tls != nil {
		registerTLS(lc.tls, lc.addrs()...)
	}
	for _, m := range lc.members {
		if err := lc.writeConfig(m); err != nil {
			return nil, err
		}
	}

	lc.mu.Lock()
	for _, m := range lc.members {
		if err := lc.startLocked(m); err != nil {
			lc.mu.Unlock()
			return nil, err
		}
	}
	lc.mu.Unlock()

	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	if err := lc.waitServing(all, startTimeout); err != nil {
		return nil, err
	}
	return lc, nil
}

// writeConfig writes the member's zoo.cfg and, for an ensemble, its myid.
func (lc *localCluster) writeConfig(m *member) error {
	dataDir := filepath.Join(m.dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	tickMs := lc.cfg.tick.Milliseconds()
	if tickMs < 1 {
		tickMs = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", tickMs)
	fmt.Fprintf(&b, "initLimit=10\nsyncLimit=5\n")
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", 2*tickMs, 20*tickMs)
	fmt.Fprintf(&b, "dataDir=%s\n", dataDir)
	if lc.tls != nil { // TLS only: no plain port
		fmt.Fprintf(&b, "secureClientPort=%d\nsecureClientPortAddress=127.0.0.1\n", m.clientPort)
	} else {
		fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=127.0.0.1\n", m.clientPort)
	}
	// Every test client comes from 127.0.0.1; the default limit of 60
	// connections per address is too low for contention tests.
	fmt.Fprintf(&b, "maxClientCnxns=0\n")
	fmt.Fprintf(&b, "4lw.commands.whitelist=*\nadmin.enableServer=false\n")
	if lc.replicated() {
		if err := lc.writeServers(&b, m); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(strconv.Itoa(m.id)+"\n"), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(m.cfgPath, []byte(b.String()), 0o644)
}

// jvmArgs returns the java command line for member m.
func (lc *localCluster) jvmArgs(m *member) []string {
	args := []string{
		// Small and quick to start (unless WithHeap): tests run several servers on small machines.
		lc.cfg.xmx(), "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
		// Container nodes are checked every second, so their removal is
		// observable in tests; this must be a system property (a zoo.cfg
		// line would be read as a different property).
		"-Dznode.container.checkIntervalMs=1000",
		// ... and each check may delete any number of them (the default,
		// 10000 a minute, would make a test of 10,000 lock paths wait).
		"-Dznode.container.maxPerMinute=10000000",
		// TTL nodes (unless WithoutExtendedTypes).
		"-Dzookeeper.extendedTypesEnabled=" + strconv.FormatBool(!lc.cfg.noExtended),
		"-Dzookeeper.4lw.commands.whitelist=*",
		"-Dzookeeper.admin.enableServer=false",
		// slf4j-simple (Debian): INFO to stderr with a timestamp.
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		// log4j/logback configurations of Apache releases: INFO to the console.
		"-Dzookeeper.log.dir=" + m.dir,
		"-Dzookeeper.root.logger=INFO,CONSOLE",
		"-Dzookeeper.console.threshold=INFO",
	}
	args = append(args, lc.saslJVMArgs()...)
	args = append(args, lc.reconfigJVMArgs()...)
	if lc.tls != nil {
		args = append(args, lc.tls.jvmArgs()...)
	}
	return append(args, "-cp", lc.inst.classpath, mainClass, m.cfgPath)
}

// startLocked starts member m's process. lc.mu must be held.
func (lc *localCluster) startLocked(m *member) error {
	f, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(lc.inst.java, lc.jvmArgs(m)...)
	cmd.Dir = m.dir
	cmd.SysProcAttr = sysProcAttr()
	var pw *prefixWriter
	if lc.logOut != nil {
		// Both streams share one writer, so os/exec uses one pipe and one
		// copying goroutine, which ends when the process exits.
		pw = &prefixWriter{lw: lc.logOut, prefix: fmt.Sprintf("zk%d| ", m.id)}
		w := io.MultiWriter(f, pw)
		cmd.Stdout, cmd.Stderr = w, w
	} else {
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", lc.inst.java, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		if pw != nil {
			pw.flush()
		}
		f.Close()
		close(p.done)
	}()
	m.proc = p
	return nil
}

// waitServing waits until each listed member serves: "srvr" reports
// standalone for a single server, leader, follower or observer for an
// ensemble.
func (lc *localCluster) waitServing(idx []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	want := map[string]bool{"leader": true, "follower": true, "observer": true}
	if !lc.replicated() {
		want = map[string]bool{"standalone": true}
	}
	pending := append([]int(nil), idx...)
	for {
		var still []int
		for _, i := range pending {
			lc.mu.Lock()
			m := lc.members[i]
			p := m.proc
			closed := lc.closed
			lc.mu.Unlock()
			if closed {
				return errors.New("cluster closed")
			}
			if p == nil {
				return fmt.Errorf("member %d is not running", i)
			}
			if p.exited() {
				return &errExited{member: i, tail: tail(lc.readLog(i), 30)}
			}
			out, err := fourLetter(m.addr(), "srvr", probeTimeout)
			if err == nil {
				if mode, _ := parseKV(out, "Mode", ':'); want[mode] {
					continue
				}
			}
			still = append(still, i)
		}
		if len(still) == 0 {
			return nil
		}
		pending = still
		if time.Now().After(deadline) {
			return fmt.Errorf("members %v not serving after %v; last lines of the log of member %d:\n%s",
				pending, timeout, pending[0], tail(lc.readLog(pending[0]), 30))
		}
		time.Sleep(pollInterval)
	}
}

func (lc *localCluster) readLog(i int) []byte {
	data, _ := os.ReadFile(lc.members[i].logPath)
	return data
}

// answering reports whether member i runs and is not paused.
func (lc *localCluster) answering(i int) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	p := lc.members[i].proc
	return p != nil && !p.paused && !p.exited()
}

func (lc *localCluster) kill(i int) error { return lc.end(i, killProc, "SIGKILL") }

// stop ends member i gracefully (SIGTERM: the server shuts down as a
// service manager stops it) and waits for it to exit.
func (lc *localCluster) stop(i int) error { return lc.end(i, termProc, "SIGTERM") }

// end sends member i's process signal (named sig) and waits for it to
// exit; a member not running is fine.
func (lc *localCluster) end(i int, signal func(*os.Process) error, sig string) error {
	lc.mu.Lock()
	if lc.closed {
		lc.mu.Unlock()
		return errors.New("zktest: cluster closed")
	}
	m := lc.members[i]
	p := m.proc
	if p == nil {
		lc.mu.Unlock()
		return nil
	}
	if !p.exited() {
		if err := signal(p.cmd.Process); err != nil && !p.exited() {
			lc.mu.Unlock()
			return fmt.Errorf("zktest: %s member %d: %w", sig, i, err)
		}
	}
	lc.mu.Unlock()

	select {
	case <-p.done:
	case <-time.After(exitTimeout):
		return fmt.Errorf("zktest: member %d did not exit within %v of %s", i, exitTimeout, sig)
	}
	lc.mu.Lock()
	if m.proc == p {
		m.proc = nil
	}
	lc.mu.Unlock()
	return nil
}

func (lc *localCluster) restart(i int) error {
	lc.mu.Lock()
	if lc.closed {
		lc.mu.Unlock()
		return errors.New("zktest: cluster closed")
	}
	m := lc.members[i]
	if m.proc != nil && !m.proc.exited() {
		lc.mu.Unlock()
		return fmt.Errorf("zktest: restart member %d: it is running (Stop or Kill it first)", i)
	}
	if err := lc.startLocked(m); err != nil {
		lc.mu.Unlock()
		return fmt.Errorf("zktest: restart member %d: %w", i, err)
	}
	lc.mu.Unlock()
	if err := lc.waitServing([]int{i}, restartTimeout); err != nil {
		return fmt.Errorf("zktest: restart member %d: %w", i, err)
	}
	return nil
}

func (lc *localCluster) pause(i int) error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	p := lc.members[i].proc
	if lc.closed || p == nil || p.exited() {
		return fmt.Errorf("zktest: pause member %d: not running", i)
	}
	if p.paused {
		return nil
	}
	if err := stopProc(p.cmd.Process); err != nil {
		return fmt.Errorf("zktest: pause member %d: %w", i, err)
	}
	p.paused = true
	// Paused means answering nothing from the moment Pause returns.
	if err := waitStopped(p.cmd.Process.Pid, 10*time.Second); err != nil {
		return fmt.Errorf("zktest: pause member %d: %w", i, err)
	}
	return nil
}

func (lc *localCluster) resume(i int) error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	p := lc.members[i].proc
	if lc.closed || p == nil || p.exited() {
		return fmt.Errorf("zktest: resume member %d: not running", i)
	}
	if !p.paused {
		return nil
	}
	if err := contProc(p.cmd.Process); err != nil {
		return fmt.Errorf("zktest: resume member %d: %w", i, err)
	}
	p.paused = false
	return nil
}

// close kills every member, waits for the processes to be reaped and removes
// the cluster's directory.
func (lc *localCluster) close() error {
	lc.mu.Lock()
	lc.closed = true
	var procs []*process
	for _, m := range lc.members {
		if m.proc != nil {
			procs = append(procs, m.proc)
			if !m.proc.exited() {
				_ = killProc(m.proc.cmd.Process)
			}
			m.proc = nil
		}
	}
	lc.mu.Unlock()

	var errs []error
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(exitTimeout):
			errs = append(errs, fmt.Errorf("zktest: process %d did not exit within %v of SIGKILL", p.cmd.Process.Pid, exitTimeout))
		}
	}
	if lc.tls != nil {
		unregisterTLS(lc.addrs()...)
	}
	if err := os.RemoveAll(lc.root); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Every cluster directory is a tempPrefix* directory in os.TempDir holding
// ownerFile, the pid of the process that created it.
const (
	tempPrefix = "zktest-"
	ownerFile  = "owner.pid"
)

var staleOnce sync.Once
