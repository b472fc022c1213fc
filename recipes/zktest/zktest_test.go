package zktest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/zktest/internal/launcher"
)

func TestStandalone(t *testing.T) {
	t.Parallel()
	c := Start(t)
	if c.Len() != 1 || len(c.Servers()) != 1 || c.ConnectString() != c.Servers()[0] {
		t.Fatalf("Len=%d Servers=%v ConnectString=%q", c.Len(), c.Servers(), c.ConnectString())
	}
	if !usingExternal() {
		if !c.Controllable() {
			t.Fatal("a locally started server should be controllable")
		}
		if c.TickTime() != DefaultTickTime {
			t.Fatalf("TickTime = %v", c.TickTime())
		}
	}
	if out, err := c.FourLetter(0, "ruok"); err != nil || out != "imok" {
		t.Fatalf("ruok = %q, %v", out, err)
	}
	if l, err := c.Leader(); err != nil || l != 0 {
		t.Fatalf("Leader = %d, %v", l, err)
	}

	cl := connect(t, c.Servers(), 4*time.Second)
	before, err := c.ZnodeCount(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Create("/zktest-standalone", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	data, _, err := cl.Get("/zktest-standalone")
	if err != nil || string(data) != "hello" {
		t.Fatalf("Get = %q, %v", data, err)
	}
	// A shared external server may see other tests' nodes too.
	if after, err := c.ZnodeCount(0); err != nil || after < before+1 || (c.Controllable() && after != before+1) {
		t.Fatalf("ZnodeCount %d -> %d, %v; want +1", before, after, err)
	}

	// A data watch is counted by wchs until it fires.
	w0, err := c.WatchCount(0)
	if err != nil {
		t.Fatal(err)
	}
	_, _, ch, err := cl.GetW("/zktest-standalone")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "watch count +1", func() bool {
		n, err := c.WatchCount(0)
		return err == nil && (n == w0+1 || !c.Controllable() && n > w0)
	})
	if _, err := cl.Set("/zktest-standalone", []byte("bye"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("watch event %v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not fire")
	}
	if c.Controllable() {
		waitFor(t, 5*time.Second, "watch count back", func() bool {
			n, err := c.WatchCount(0)
			return err == nil && n == w0
		})
	}
	if err := cl.Delete("/zktest-standalone", -1); err != nil {
		t.Fatal(err)
	}
}

func TestServerSettings(t *testing.T) {
	t.Parallel()
	c := Start(t)
	requireLocal(t, c)
	// The container manager starts (and logs) just after the server starts
	// serving.
	waitFor(t, 10*time.Second, `"Using checkIntervalMs=1000" in the log`, func() bool {
		return c.LogContains(0, "Using checkIntervalMs=1000")
	})
	if c.LogContains(0, "no such text in any log") {
		t.Fatal("LogContains matches anything")
	}
	conf, err := c.FourLetter(0, "conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tickTime=200", "minSessionTimeout=400", "maxSessionTimeout=4000", "maxClientCnxns=0"} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf lacks %q:\n%s", want, conf)
		}
	}

	cl := connect(t, c.Servers(), 4*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	// TTL nodes need extendedTypesEnabled.
	if _, err := cl.CreateTTL("/zktest-ttl", nil, zk.FlagTTL, acl, time.Minute); err != nil {
		t.Fatalf("CreateTTL: %v", err)
	}
	// A container emptied of its children goes within about a check
	// interval (1s).
	if _, err := cl.CreateContainer("/zktest-container", nil, zk.FlagContainer, acl); err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := cl.Create("/zktest-container/child", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if err := cl.Delete("/zktest-container/child", -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "container removal", func() bool {
		ok, _, err := cl.Exists("/zktest-container")
		return err == nil && !ok
	})
}

func TestStandalonePauseResume(t *testing.T) {
	t.Parallel()
	c := Start(t)
	requireLocal(t, c)
	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	// Stopped when Pause returns, every thread of it (a SIGSTOP alone
	// stops a process some time later: on a loaded machine it answered
	// the probe below).
	if n, err := runningThreads(c.local.members[0].proc.cmd.Process.Pid); err != nil || n != 0 {
		t.Fatalf("after Pause: %d threads running (%v)", n, err)
	}
	if out, err := fourLetter(c.Servers()[0], "ruok", 300*time.Millisecond); err == nil {
		t.Fatalf("paused server answered %q", out)
	}
	if err := c.Resume(0); err != nil {
		t.Fatal(err)
	}
	// A resumed JVM on a loaded machine may take longer than one probe to
	// answer: the server must come back, not within one probe's timeout.
	var last string // what the last probe saw, for the failure message
	waitExplained(t, 15*time.Second, "ruok answered after Resume", func() bool {
		out, err := c.FourLetter(0, "ruok")
		last = fmt.Sprintf("%q, %v", out, err)
		return err == nil && out == "imok"
	}, func() string { return "last probe: " + last })

	// Kill and Restart keep the data.
	cl := connect(t, c.Servers(), 4*time.Second)
	if _, err := cl.Create("/zktest-persist", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(0); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	if err := c.Pause(0); err == nil {
		t.Fatal("Pause of a killed member succeeded")
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(0); err == nil {
		t.Fatal("Restart of a running member succeeded")
	}
	// The client's session may have expired while the member was down; it
	// reconnects on its own. A loaded machine makes all of that slow.
	waitExplained(t, 30*time.Second, "node after restart", func() bool {
		data, _, err := cl.Get("/zktest-persist")
		last = fmt.Sprintf("%q, %v", data, err)
		return err == nil && string(data) == "v"
	}, func() string {
		return fmt.Sprintf("last Get: %s; client states %v; ruok %s", last, cl.statesSeen(), probe(c))
	})

	// Stop is graceful (SIGTERM), keeps the data, and Restart follows it.
	if err := c.Stop(0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FourLetter(0, "ruok"); err == nil {
		t.Fatal("a stopped member answered ruok")
	}
	if err := c.Stop(0); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	waitExplained(t, 30*time.Second, "node after Stop and Restart", func() bool {
		data, _, err := cl.Get("/zktest-persist")
		last = fmt.Sprintf("%q, %v", data, err)
		return err == nil && string(data) == "v"
	}, func() string {
		return fmt.Sprintf("last Get: %s; client states %v; ruok %s", last, cl.statesSeen(), probe(c))
	})
}

func TestEnsemble(t *testing.T) {
	t.Parallel()
	c := StartEnsemble(t, 3)
	requireLocal(t, c)
	if c.Len() != 3 || strings.Count(c.ConnectString(), ",") != 2 {
		t.Fatalf("Len=%d ConnectString=%q", c.Len(), c.ConnectString())
	}
	modes := map[string]int{}
	for i := 0; i < 3; i++ {
		modes[c.mode4(i, time.Second)]++
	}
	if modes["leader"] != 1 || modes["follower"] != 2 {
		t.Fatalf("modes %v", modes)
	}
	leader, err := c.Leader()
	if err != nil {
		t.Fatal(err)
	}
	if c.mode4(leader, time.Second) != "leader" {
		t.Fatalf("Leader() = %d, which is not the leader", leader)
	}

	cl := connect(t, c.Servers(), 4*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := cl.Create("/zktest-ens", []byte("1"), 0, acl); err != nil {
		t.Fatal(err)
	}

	// Kill the leader: the other two elect a new one and keep serving.
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	if out, err := fourLetter(c.Servers()[leader], "ruok", time.Second); err == nil {
		t.Fatalf("killed member answered %q", out)
	}
	newLeader, err := c.Leader()
	if err != nil {
		t.Fatal(err)
	}
	if newLeader == leader {
		t.Fatalf("Leader() returned the killed member %d", leader)
	}
	waitFor(t, 20*time.Second, "write after leader kill", func() bool {
		_, err := cl.Set("/zktest-ens", []byte("2"), -1)
		return err == nil
	})

	// Restart brings the old leader back as a follower with the new data.
	if err := c.Restart(leader); err != nil {
		t.Fatal(err)
	}
	if m := c.mode4(leader, time.Second); m != "follower" {
		t.Fatalf("restarted member is %q", m)
	}
	waitFor(t, 10*time.Second, "restarted member caught up", func() bool {
		n0, err0 := c.ZnodeCount(leader)
		n1, err1 := c.ZnodeCount(newLeader)
		return err0 == nil && err1 == nil && n0 == n1
	})

	// Pause the leader: the others notice (syncLimit), elect another one,
	// and the paused one rejoins as a follower after Resume.
	if err := c.Pause(newLeader); err != nil {
		t.Fatal(err)
	}
	third, err := c.Leader()
	if err != nil {
		t.Fatal(err)
	}
	if third == newLeader {
		t.Fatalf("Leader() returned the paused member %d", newLeader)
	}
	if err := c.Resume(newLeader); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "one leader, two followers", func() bool {
		modes := map[string]int{}
		for i := 0; i < 3; i++ {
			modes[c.mode4(i, time.Second)]++
		}
		return modes["leader"] == 1 && modes["follower"] == 2
	})
	waitFor(t, 20*time.Second, "write after resume", func() bool {
		_, err := cl.Set("/zktest-ens", []byte("3"), -1)
		return err == nil
	})
}

func TestNotControllable(t *testing.T) {
	c := &Cluster{mode: modeExternal, servers: []string{"127.0.0.1:1"}, tick: DefaultTickTime}
	for name, f := range map[string]func(int) error{
		"Kill": c.Kill, "Restart": c.Restart, "Pause": c.Pause, "Resume": c.Resume,
	} {
		if err := f(0); !errors.Is(err, ErrNotControllable) {
			t.Errorf("%s: %v, want ErrNotControllable", name, err)
		}
	}
	if err := c.Kill(5); err == nil || errors.Is(err, ErrNotControllable) {
		t.Errorf("Kill(5) = %v, want a range error", err)
	}
	if c.Controllable() || c.LogContains(0, "") || c.Close() != nil {
		t.Error("external cluster misbehaves")
	}
}

func TestLaunchBadSize(t *testing.T) {
	if _, err := Launch(0); err == nil {
		t.Fatal("Launch(0) succeeded")
	}
}

func TestLogOutputAndFailureDump(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	c, err := Launch(1, WithLogOutput(&buf), WithTickTime(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if c.Controllable() && c.TickTime() != 100*time.Millisecond {
		t.Errorf("TickTime = %v", c.TickTime())
	}
	if !c.Controllable() {
		c.Close()
		t.Skip("not a local server")
	}
	if out, err := c.FourLetter(0, "conf"); err != nil || !strings.Contains(out, "tickTime=100") {
		t.Errorf("conf = %q, %v", out, err)
	}
	// The container manager logs its settings just after the port opens,
	// so possibly after Launch has returned (a busy machine once closed the
	// server before that line was written).
	waitFor(t, 10*time.Second, `"Using checkIntervalMs=" in WithLogOutput's writer`, func() bool {
		return strings.Contains(buf.String(), "Using checkIntervalMs=")
	})
	// The failure dump goes through t.Log.
	rec := &recordTB{TB: t}
	c.logTails(rec)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if !strings.Contains(buf.String(), "zk1| ") || !strings.Contains(buf.String(), "Using checkIntervalMs=") {
		t.Errorf("WithLogOutput got:\n%s", buf.String())
	}
	if !strings.Contains(rec.out.String(), " INFO org.apache.zookeeper") {
		t.Errorf("log tail:\n%s", rec.out.String())
	}
	if err := c.Kill(0); err == nil {
		t.Error("Kill after Close succeeded")
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"a\nb\nc", 1, "c"},
		{"", 3, ""},
	} {
		if got := tail([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// recordTB captures Logf output.
type recordTB struct {
	testing.TB
	out bytes.Buffer
}

func (r *recordTB) Logf(format string, args ...any) {
	r.out.WriteString(strings.TrimSpace(format))
	for _, a := range args {
		if s, ok := a.(string); ok {
			r.out.WriteString(s)
		}
	}
}

func TestCloseWhilePaused(t *testing.T) {
	t.Parallel()
	c, err := Launch(1)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Controllable() {
		c.Close()
		t.Skip("not a local server")
	}
	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close of a paused server took %v", d)
	}
	if _, err := fourLetter(c.Servers()[0], "ruok", 300*time.Millisecond); err == nil {
		t.Fatal("server answers after Close")
	}
}

// TestUnavailableNamesZkdocker checks that without a local installation
// and without package zkdocker, the error tells how to get a server in
// Docker: import zkdocker (which this package does not, so that its users
// do not get testcontainers' modules).
func TestUnavailableNamesZkdocker(t *testing.T) {
	if launcher.Registered() != nil {
		t.Fatal("a launcher is registered in zktest's own tests")
	}
	t.Setenv(EnvServers, "")
	t.Setenv(EnvZooKeeperHome, t.TempDir())
	t.Setenv(EnvTLS, "") // the advice for a plain server; TLS needs a local installation
	_, err := Launch(1)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Launch without a local installation = %v, want ErrUnavailable", err)
	}
	if want := `import _ "github.com/zkrecipes/zkrecipes/recipes/zktest/zkdocker"`; !strings.Contains(err.Error(), want) {
		t.Fatalf("the error does not say %s: %v", want, err)
	}
}
