//go:build unix

package main

// The tests build zkrun once (with -race when the tests run with it) and run
// it as a real process against one real ZooKeeper server, with real child
// commands run through sh. A child writes a marker file when it starts
// (its pid, the ZKRUN_* variables) and then blocks reading its stdin, which
// is zkrun's: the test releases it by closing that pipe.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

var binary string // the zkrun built by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zkrun-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "zkrun")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build zkrun:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := testutil.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// zkServer returns the one server every test of this package shares; each
// test works under a path of its own.
func zkServer(t *testing.T) *zktest.Cluster { return testutil.SharedServer(t) }

func newPath() string { return "/zkrun-" + zkpath.NewUUID()[:8] }

// syncBuf is a bytes.Buffer safe for exec's copying goroutine and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running zkrun.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr syncBuf
	stdout syncBuf
	exited chan struct{}
	code   int
}

// zkrun starts zkrun with args against zkc, its stdin a pipe the test holds.
func zkrun(t *testing.T, zkc *zktest.Cluster, args ...string) *proc {
	t.Helper()
	p := &proc{exited: make(chan struct{})}
	flags := []string{"-servers", zkc.ConnectString(), "-log-level", "info"}
	if ca, cert, key := zkc.TLSFiles(); ca != "" { // a TLS cluster
		flags = append(flags, "-tls-ca", ca, "-tls-cert", cert, "-tls-key", key)
	}
	p.cmd = exec.Command(binary, append(flags, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("zkrun %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.code, p.stdout.String(), p.stderr.String())
		}
	})
	return p
}

// release lets a blocking child end (it reads EOF from its stdin).
func (p *proc) release() { p.stdin.Close() }

// wait waits for zkrun to exit and returns its exit status.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.code
	case <-time.After(60 * time.Second):
		t.Fatalf("zkrun did not exit\nstderr:\n%s", p.stderr.String())
		return -1
	}
}

// blocker is a child command that writes marker (pid, token, node, path,
// id, via a rename so that the test never reads half of it) and then
// waits for its stdin to end.
func blocker(marker string) []string {
	return []string{"sh", "-c", `echo "$$ $ZKRUN_TOKEN $ZKRUN_NODE $ZKRUN_PATH $ZKRUN_TOKEN_HEX $ZKRUN_ID" > "$1.tmp" && mv "$1.tmp" "$1"; read x; exit 0`, "child", marker}
}

// started is what a blocker wrote.
type started struct {
	pid   int
	token int64
	node  string
	path  string
	hex   string
	id    string
}

// waitStarted waits for marker and parses it; the child's process group is
// killed when the test ends, whatever happened.
func waitStarted(t *testing.T, marker string) started {
	t.Helper()
	var data []byte
	zktest.Eventually(t, 60*time.Second, "the child's marker "+filepath.Base(marker), func() bool {
		var err error
		data, err = os.ReadFile(marker)
		return err == nil
	})
	f := strings.Fields(string(data))
	if len(f) < 5 {
		t.Fatalf("marker %s: %q", marker, data)
	}
	var s started
	var err error
	if s.pid, err = strconv.Atoi(f[0]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-s.pid, syscall.SIGKILL) })
	if s.token, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		t.Fatalf("ZKRUN_TOKEN %q: %v", f[1], err)
	}
	s.node, s.path, s.hex = f[2], f[3], f[4]
	if len(f) > 5 {
		s.id = f[5]
	}
	if want := (recipes.FenceToken{Czxid: s.token}).String(); s.hex != want {
		t.Errorf("ZKRUN_TOKEN_HEX = %q, want %q", s.hex, want)
	}
	return s
}

func noFile(t *testing.T, path, why string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists (err %v): %s", filepath.Base(path), err, why)
	}
}

func observer(t *testing.T, zkc *zktest.Cluster) *recipes.Client {
	return testutil.Connect(t, zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
}

// waitChildren waits until path has n children and returns them.
func waitChildren(t *testing.T, c *recipes.Client, path string, n int) []string {
	t.Helper()
	var kids []string
	zktest.Eventually(t, 60*time.Second, fmt.Sprintf("%d children under %s", n, path), func() bool {
		var err error
		kids, _, err = c.Children(context.Background(), path)
		if errors.Is(err, recipes.ErrNoNode) && n == 0 {
			return true
		}
		return err == nil && len(kids) == n
	})
	return kids
}

func TestLockWaitsForTheHolder(t *testing.T) {
	zkc := zkServer(t)
	obs := observer(t, zkc)
	dir, path := t.TempDir(), newPath()
	m1, m2 := filepath.Join(dir, "first"), filepath.Join(dir, "second")

	first := zkrun(t, zkc, append([]string{"lock", path, "--"}, blocker(m1)...)...)
	s1 := waitStarted(t, m1)
	if s1.path != path || !strings.HasPrefix(s1.node, path+"/") || s1.token <= 0 {
		t.Fatalf("first child's environment: %+v", s1)
	}
	second := zkrun(t, zkc, append([]string{"lock", path, "--"}, blocker(m2)...)...)
	kids := waitChildren(t, obs, path, 2)
	noFile(t, m2, "the second child started while the first holds the lock (queue "+strings.Join(kids, " ")+")")

	first.release()
	if code := first.wait(t); code != 0 {
		t.Fatalf("first zkrun: exit %d, want 0", code)
	}
	s2 := waitStarted(t, m2)
	if s2.token <= s1.token || s2.node == s1.node {
		t.Fatalf("second holder: token %d node %s; first: token %d node %s", s2.token, s2.node, s1.token, s1.node)
	}
	second.release()
	if code := second.wait(t); code != 0 {
		t.Fatalf("second zkrun: exit %d, want 0", code)
	}
	waitChildren(t, obs, path, 0)
	t.Logf("first zkrun's log:\n%s", first.stderr.String())
	t.Logf("second zkrun's log:\n%s", second.stderr.String())
}

// holdLock starts a zkrun holding the lock at path until the test releases
// it, and waits for its child to run.
func holdLock(t *testing.T, zkc *zktest.Cluster, path string) (*proc, started) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "holder")
	p := zkrun(t, zkc, append([]string{"lock", path, "--"}, blocker(marker)...)...)
	return p, waitStarted(t, marker)
}

func TestTryOnAHeldLock(t *testing.T) {
	zkc := zkServer(t)
	obs := observer(t, zkc)
	path := newPath()
	holder, _ := holdLock(t, zkc, path)
	marker := filepath.Join(t.TempDir(), "tried")
	p := zkrun(t, zkc, "lock", "-try", path, "--", "touch", marker)
	if code := p.wait(t); code != ExitHeld {
		t.Fatalf("zkrun lock -try on a held lock: exit %d, want %d (ExitHeld)\n%s", code, ExitHeld, p.stderr.String())
	}
	noFile(t, marker, "the command ran without the lock")
	waitChildren(t, obs, path, 1) // the try left no node behind
	holder.release()
	if code := holder.wait(t); code != 0 {
		t.Fatalf("holder: exit %d", code)
	}
	// Free, -try takes it.
	p = zkrun(t, zkc, "lock", "-try", path, "--", "touch", marker)
	if code := p.wait(t); code != 0 {
		t.Fatalf("zkrun lock -try on a free lock: exit %d\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal(err)
	}
}

func TestTimeout(t *testing.T) {
	zkc := zkServer(t)
	obs := observer(t, zkc)
	path := newPath()
	holder, _ := holdLock(t, zkc, path)
	marker := filepath.Join(t.TempDir(), "timed")
	p := zkrun(t, zkc, "lock", "-timeout", "300ms", path, "--", "touch", marker)
	if code := p.wait(t); code != ExitTimeout {
		t.Fatalf("zkrun lock -timeout on a held lock: exit %d, want %d (ExitTimeout)\n%s", code, ExitTimeout, p.stderr.String())
	}
	noFile(t, marker, "the command ran without the lock")
	waitChildren(t, obs, path, 1) // the waiter's node is gone
	holder.release()
	holder.wait(t)
}

func TestExitStatus(t *testing.T) {
	zkc := zkServer(t)
	path := newPath()
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"exit 3", []string{"lock", path, "--", "sh", "-c", "exit 3"}, 3},
		{"exit 0", []string{"lock", path, "--", "true"}, 0},
		{"killed by SIGKILL", []string{"lock", path, "--", "sh", "-c", "kill -KILL $$"}, 128 + 9},
		{"not found", []string{"lock", path, "--", "/nonexistent/zkrun-test-command"}, ExitNotFound},
		{"cannot run", []string{"lock", path, "--", "/"}, ExitCannotRun},
		{"no command", []string{"lock", path, "--"}, ExitUsage},
		{"no --", []string{"lock", path, "true"}, ExitUsage},
		{"flag after path", []string{"lock", path, "-try", "--", "true"}, ExitUsage},
		{"bad path", []string{"lock", "relative", "--", "true"}, ExitUsage},
		{"sem without -n", []string{"sem", path, "--", "true"}, ExitUsage},
		{"elect without id", []string{"elect", path, "--", "true"}, ExitUsage},
		{"unknown subcommand", []string{"unlock", path, "--", "true"}, ExitUsage},
		{"bad auth", []string{"-auth", "digest", "lock", path, "--", "true"}, ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := zkrun(t, zkc, tc.args...)
			if code := p.wait(t); code != tc.want {
				t.Fatalf("zkrun %s: exit %d, want %d\n%s", strings.Join(tc.args, " "), code, tc.want, p.stderr.String())
			}
		})
	}
}

func TestNoServer(t *testing.T) {
	cmd := exec.Command(binary, "lock", "/a", "--", "true")
	cmd.Env = append(os.Environ(), "ZK_SERVERS=")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != ExitUsage || !strings.Contains(string(out), "ZK_SERVERS") {
		t.Fatalf("no servers: exit %d, want %d, output %q", code, ExitUsage, out)
	}
	// No session: nothing listens on the port zkrun is given.
	cmd = exec.Command(binary, "-servers", "127.0.0.1:1", "-connect-timeout", "500ms", "lock", "/a", "--", "true")
	out, _ = cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != ExitError {
		t.Fatalf("no session: exit %d, want %d, output %q", code, ExitError, out)
	}
}

func TestHelp(t *testing.T) {
	cmd := exec.Command(binary, "-h")
	cmd.Env = append(os.Environ(), "ZK_SERVERS=zk.example:2181")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zkrun -h: %v\n%s", err, out)
	}
	for _, want := range []string{"$ZK_SERVERS", "ZKRUN_TOKEN", "121", "122", "124", "125"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("zkrun -h does not mention %s:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "zk.example") {
		t.Errorf("zkrun -h shows the value of $ZK_SERVERS as a default:\n%s", out)
	}
}

// A zkrun stopped past its session is told, when it runs again, that the
// hold is gone: its child, which lives on meanwhile, gets SIGTERM.
func TestLostHoldStopsTheChild(t *testing.T) {
	zkc := zkServer(t)
	obs := observer(t, zkc)
	dir, path := t.TempDir(), newPath()
	startedM, termed := filepath.Join(dir, "started"), filepath.Join(dir, "termed")
	script := `trap 'touch "$2"; exit 0' TERM; echo $$ > "$1.tmp" && mv "$1.tmp" "$1"; while :; do sleep 0.1; done`
	p := zkrun(t, zkc, "-session-timeout", "2s", "-grace", "30s", "lock", path, "--", "sh", "-c", script, "child", startedM, termed)
	var pid int
	zktest.Eventually(t, 60*time.Second, "the child to start", func() bool {
		data, err := os.ReadFile(startedM)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	waitChildren(t, obs, path, 1)

	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Signal(syscall.SIGCONT) })
	// The server expires the stopped zkrun's session: its node goes.
	waitChildren(t, obs, path, 0)
	noFile(t, termed, "the child was signalled while zkrun was stopped")
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != ExitLost {
		t.Fatalf("zkrun after its session expired: exit %d, want %d (ExitLost)\n%s", code, ExitLost, p.stderr.String())
	}
	if _, err := os.Stat(termed); err != nil {
		t.Fatalf("the child did not get SIGTERM: %v\n%s", err, p.stderr.String())
	}
	t.Logf("zkrun's log:\n%s", p.stderr.String())
}

func TestSemaphore(t *testing.T) {
	zkc := zkServer(t)
	obs := observer(t, zkc)
	dir, path := t.TempDir(), newPath()
	var ps []*proc
	var markers []string
	for i := range 3 {
		markers = append(markers, filepath.Join(dir, fmt.Sprint("holder", i)))
		ps = append(ps, zkrun(t, zkc, append([]string{"sem", "-n", "2", path, "--"}, blocker(markers[i])...)...))
		if i < 2 {
			waitStarted(t, markers[i])
		}
	}
	// The third has its lease node made and waits for the count to drop.
	waitChildren(t, obs, path+"/leases", 3)
	noFile(t, markers[2], "a third holder of a semaphore of 2 leases ran")
	ps[0].release()
	if code := ps[0].wait(t); code != 0 {
		t.Fatalf("first: exit %d", code)
	}
	s := waitStarted(t, markers[2])
	if !strings.HasPrefix(s.node, path+"/leases/") {
		t.Errorf("ZKRUN_NODE %q is not a lease under %s/leases", s.node, path)
	}
	for _, p := range ps[1:] {
		p.release()
		if code := p.wait(t); code != 0 {
			t.Fatalf("exit %d\n%s", code, p.stderr.String())
		}
	}
	waitChildren(t, obs, path+"/leases", 0)
}

func TestElect(t *testing.T) {
	zkc := zkServer(t)
	obs := observer(t, zkc)
	dir, path := t.TempDir(), newPath()
	ma, mb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	a := zkrun(t, zkc, append([]string{"elect", path, "alpha", "--"}, blocker(ma)...)...)
	sa := waitStarted(t, ma)
	b := zkrun(t, zkc, append([]string{"elect", path, "beta", "--"}, blocker(mb)...)...)
	waitChildren(t, obs, path, 2)
	noFile(t, mb, "a second participant ran while the first leads")
	a.release()
	if code := a.wait(t); code != 0 {
		t.Fatalf("alpha: exit %d", code)
	}
	sb := waitStarted(t, mb)
	if sa.id != "alpha" || sb.id != "beta" || sb.token <= sa.token {
		t.Fatalf("alpha %+v, beta %+v", sa, sb)
	}
	b.release()
	if code := b.wait(t); code != 0 {
		t.Fatalf("beta: exit %d", code)
	}
	waitChildren(t, obs, path, 0)
}

// SIGTERM to zkrun goes to the child; zkrun exits with the child's status.
func TestSignalForwarded(t *testing.T) {
	zkc := zkServer(t)
	obs := observer(t, zkc)
	dir, path := t.TempDir(), newPath()
	startedM := filepath.Join(dir, "started")
	script := `trap 'exit 7' TERM; echo $$ > "$1.tmp" && mv "$1.tmp" "$1"; while :; do sleep 0.1; done`
	p := zkrun(t, zkc, "lock", path, "--", "sh", "-c", script, "child", startedM)
	zktest.Eventually(t, 60*time.Second, "the child to start", func() bool {
		_, err := os.Stat(startedM)
		return err == nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 7 {
		t.Fatalf("zkrun after SIGTERM: exit %d, want the child's 7\n%s", code, p.stderr.String())
	}
	waitChildren(t, obs, path, 0)
}
