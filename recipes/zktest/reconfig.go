package zktest

// Dynamic reconfiguration (ZooKeeper 3.5+): an ensemble that accepts
// reconfig requests, members added while it runs, and reconfigurations
// run as the super user.

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// The super user of a WithReconfig cluster, whom the servers let run
// reconfig (zookeeper.DigestAuthenticationProvider.superDigest).
const (
	superUser     = "super"
	superPassword = "zktest-super"
)

// reconfigTimeout bounds one Reconfig and one read of the configuration.
const reconfigTimeout = 30 * time.Second

// WithReconfig starts the servers with dynamic reconfiguration enabled
// (reconfigEnabled=true, standaloneEnabled=false, each server line with
// its client address), so that AddMember and Reconfig can grow, shrink
// and change the ensemble while it runs; a single member then runs as an
// ensemble of one (Mode: leader), to which others can be added. Reconfig
// requires authorization: the servers know a super user (SuperAuth). It
// needs a local installation of ZooKeeper 3.5 or later. The servers are
// plain, also under ZK_TEST_TLS (WithTLS with it is an error): before
// 3.10 the configuration names no TLS client address.
func WithReconfig() Option {
	return func(c *config) error { c.reconfig = true; return nil }
}

// plainForReconfig makes a WithReconfig cluster plain, also under
// ZK_TEST_TLS: before ZooKeeper 3.10 a server line names no TLS client
// address, and its client address would be the TLS port's.
func (c *config) plainForReconfig() error {
	if !c.reconfig {
		return nil
	}
	if c.tls == tlsOn {
		return errors.New("zktest: WithReconfig with WithTLS: the dynamic configuration of ZooKeeper before 3.10 names no TLS client address")
	}
	c.tls = tlsOff
	return nil
}

// SuperAuth returns the digest credentials of a WithReconfig cluster's
// super user, for AddAuth: scheme "digest" and "user:password".
func SuperAuth() (scheme string, auth []byte) {
	return "digest", []byte(superUser + ":" + superPassword)
}

// replicated reports whether the members run as a quorum (server lines,
// myid) rather than as a standalone server.
func (lc *localCluster) replicated() bool { return len(lc.members) > 1 || lc.cfg.reconfig }

// spec returns member m's server line in the reconfig form:
// server.N=host:quorumPort:electionPort:role;host:clientPort.
func (m *member) spec(observer bool) string {
	role := "participant"
	if observer {
		role = "observer"
	}
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d:%s;127.0.0.1:%d", m.id, m.quorumPort, m.electionPort, role, m.clientPort)
}

// writeServers writes the server lines of member m's zoo.cfg: every
// member's, or for a member added later the ensemble's lines and its own.
func (lc *localCluster) writeServers(b *strings.Builder, m *member) error {
	b.WriteString(m.peerType())
	if !lc.cfg.reconfig {
		for _, o := range lc.members {
			quorum, err := lc.quorumAddr(m, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(b, "server.%d=%s:%d%s\n", o.id, quorum, o.electionPort, o.observerLine())
		}
		return nil
	}
	b.WriteString("reconfigEnabled=true\nstandaloneEnabled=false\n")
	if m.servers != "" {
		b.WriteString(m.servers)
		return nil
	}
	for _, o := range lc.members {
		fmt.Fprintf(b, "%s\n", o.spec(o.observer))
	}
	return nil
}

// reconfigJVMArgs are the system properties of a WithReconfig server:
// the super user's digest.
func (lc *localCluster) reconfigJVMArgs() []string {
	if !lc.cfg.reconfig {
		return nil
	}
	sum := sha1.Sum([]byte(superUser + ":" + superPassword))
	return []string{"-Dzookeeper.DigestAuthenticationProvider.superDigest=" + superUser + ":" + base64.StdEncoding.EncodeToString(sum[:])}
}

func (c *Cluster) reconfigurable(op string) error {
	if c.mode != modeLocal || !c.local.cfg.reconfig {
		return fmt.Errorf("zktest: %s: needs a local cluster started WithReconfig", op)
	}
	return nil
}

// AddMember starts a new server (index Len() before the call, myid one
// more) configured with the ensemble's current members and itself, as a
// participant or an observer, and waits until it has synced with the
// leader. It is not a member yet: Reconfig adds it. Call it from one
// goroutine, not concurrently with the Cluster's other methods.
func (c *Cluster) AddMember(observer bool) (int, error) {
	if err := c.reconfigurable("add member"); err != nil {
		return -1, err
	}
	data, err := c.Config()
	if err != nil {
		return -1, err
	}
	var lines strings.Builder
	for _, l := range strings.Split(data, "\n") {
		if strings.HasPrefix(l, "server.") {
			lines.WriteString(l + "\n")
		}
	}
	i, err := c.local.addMember(lines.String(), observer)
	if err != nil {
		return -1, fmt.Errorf("zktest: add member: %w", err)
	}
	c.servers = append(c.servers, c.local.members[i].addr())
	return i, nil
}

func (lc *localCluster) addMember(lines string, observer bool) (int, error) {
	ports, err := freePorts(3)
	if err != nil {
		return -1, err
	}
	lc.mu.Lock()
	if lc.closed {
		lc.mu.Unlock()
		return -1, errors.New("cluster closed")
	}
	i := len(lc.members)
	m := &member{id: i + 1, dir: filepath.Join(lc.root, fmt.Sprintf("zk%d", i+1)),
		clientPort: ports[0], quorumPort: ports[1], electionPort: ports[2], observer: observer}
	m.cfgPath = filepath.Join(m.dir, "zoo.cfg")
	m.logPath = filepath.Join(m.dir, "zookeeper.log")
	m.servers = lines + m.spec(observer) + "\n"
	lc.members = append(lc.members, m)
	err = lc.writeConfig(m)
	if err == nil {
		err = lc.startLocked(m)
	}
	lc.mu.Unlock()
	if err != nil {
		return -1, err
	}
	return i, lc.waitMode(i, restartTimeout, "follower", "observer")
}

// waitMode waits until member i's "srvr" reports one of modes.
func (lc *localCluster) waitMode(i int, timeout time.Duration, modes ...string) error {
	deadline := time.Now().Add(timeout)
	for {
		lc.mu.Lock()
		m, p := lc.members[i], lc.members[i].proc
		lc.mu.Unlock()
		if p == nil || p.exited() {
			return &errExited{member: i, tail: tail(lc.readLog(i), 30)}
		}
		if out, err := fourLetter(m.addr(), "srvr", probeTimeout); err == nil {
			if mode, _ := parseKV(out, "Mode", ':'); mode != "" && strings.Contains(" "+strings.Join(modes, " ")+" ", " "+mode+" ") {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("member %d not %v after %v; last lines of its log:\n%s", i, modes, timeout, tail(lc.readLog(i), 30))
		}
		time.Sleep(pollInterval)
	}
}

// Reconfig runs an incremental reconfiguration as the super user: the
// members joining (started by AddMember, each in the role it was given)
// and those leaving, by index. It returns once the ensemble has committed
// the new configuration. A member that left keeps running until Kill or
// Stop; Config and Reconfig no longer ask it.
func (c *Cluster) Reconfig(joining, leaving []int) error {
	if err := c.reconfigurable("reconfig"); err != nil {
		return err
	}
	var join, leave []string
	for _, i := range append(append([]int(nil), joining...), leaving...) {
		if err := c.checkIndex(i); err != nil {
			return err
		}
	}
	for _, i := range joining {
		join = append(join, c.local.memberSpec(i))
	}
	for _, i := range leaving {
		leave = append(leave, strconv.Itoa(i+1))
	}
	err := c.withConn(leaving, func(conn *zk.Conn) error { // not through a leaving member: it may drop the reply
		if err := conn.AddAuth(SuperAuth()); err != nil {
			return err
		}
		_, err := conn.IncrementalReconfig(join, leave, -1)
		return err
	})
	if errors.Is(err, zk.ErrConnectionClosed) {
		// The leader left: the ensemble elects another, and the member
		// asked drops its clients meanwhile, the reply with them. Whether
		// the reconfiguration was committed, the configuration says.
		err = c.reconfigured(joining, leaving, err)
	}
	if err != nil {
		return fmt.Errorf("zktest: reconfig (joining %v, leaving %v): %w", joining, leaving, err)
	}
	c.local.mu.Lock()
	defer c.local.mu.Unlock()
	if c.local.left == nil {
		c.local.left = map[int]bool{}
	}
	for _, i := range leaving {
		c.local.left[i] = true
	}
	for _, i := range joining {
		delete(c.local.left, i)
	}
	return nil
}

// reconfigured returns nil when the ensemble's configuration has the
// members joining and not those leaving, else lost.
func (c *Cluster) reconfigured(joining, leaving []int, lost error) error {
	for i := range c.Servers() {
		c.local.mu.Lock()
		left := c.local.left[i]
		c.local.mu.Unlock()
		if left || slices.Contains(leaving, i) || !c.local.answering(i) {
			continue
		}
		if err := c.local.waitMode(i, restartTimeout, "leader", "follower", "observer"); err != nil {
			return fmt.Errorf("%w; then %w", lost, err)
		}
	}
	data, err := c.config(leaving)
	if err != nil {
		return fmt.Errorf("%w; then %w", lost, err)
	}
	has := func(i int) bool { return strings.Contains("\n"+data, "\nserver."+strconv.Itoa(i+1)+"=") }
	for _, i := range joining {
		if !has(i) {
			return lost
		}
	}
	for _, i := range leaving {
		if has(i) {
			return lost
		}
	}
	return nil
}

// memberSpec returns member i's server line as its zoo.cfg gives it.
func (lc *localCluster) memberSpec(i int) string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	m := lc.members[i]
	prefix := "server." + strconv.Itoa(m.id) + "="
	for _, l := range strings.Split(m.servers, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return m.spec(m.observer)
}

// Config returns the ensemble's configuration as /zookeeper/config holds
// it (server lines and version), read from a member that has not left
// after a sync.
func (c *Cluster) Config() (string, error) {
	if err := c.reconfigurable("config"); err != nil {
		return "", err
	}
	return c.config(nil)
}

// config is Config, read through the members but those of avoid.
func (c *Cluster) config(avoid []int) (string, error) {
	var data []byte
	err := c.withConn(avoid, func(conn *zk.Conn) error {
		if _, err := conn.Sync("/zookeeper/config"); err != nil {
			return err
		}
		var err error
		data, _, err = conn.Get("/zookeeper/config")
		return err
	})
	if err != nil {
		return "", fmt.Errorf("zktest: reading /zookeeper/config: %w", err)
	}
	return string(data), nil
}

// withConn runs fn on a go-zookeeper connection to the running members
// that have not left, but those of avoid, within reconfigTimeout.
func (c *Cluster) withConn(avoid []int, fn func(*zk.Conn) error) error {
	var addrs []string
	for i, a := range c.Servers() {
		c.local.mu.Lock()
		left := c.local.left[i]
		c.local.mu.Unlock()
		if !left && !slices.Contains(avoid, i) && c.local.answering(i) {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return errors.New("no member running")
	}
	conn, events, err := zk.Connect(addrs, 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.After(reconfigTimeout)
	// A request made before there is a session fails with ErrNoServer
	// whenever every address was tried once: right after a reconfig the
	// members may not serve yet. Wait for the session first.
	for session := false; !session; {
		select {
		case ev := <-events:
			session = ev.State == zk.StateHasSession
		case <-deadline:
			return fmt.Errorf("no session within %v", reconfigTimeout)
		}
	}
	done := make(chan error, 1)
	go func() { done <- fn(conn) }()
	select {
	case err := <-done:
		return err
	case <-deadline:
		return fmt.Errorf("no answer within %v", reconfigTimeout)
	}
}

// quietZK drops go-zookeeper's log lines.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
