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

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

var (
	binary     string // the zkrun built by TestMain
	serverOnce sync.Once
	server     *zktest.Cluster
	serverErr  error
)

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
	code := m.Run()
	if server != nil {
		server.Close()
	}
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// zkServer returns the one server every test of this package shares; each
// test works under a path of its own.
func zkServer(t *testing.T) *zktest.Cluster {
	t.Helper()
	serverOnce.Do(func() { server, serverErr = zktest.Launch(1) })
	if errors.Is(serverErr, zktest.ErrUnavailable) {
		testutil.Unavailable(t, serverErr)
	}
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	return server
}

func newPath() string { return "/zkrun-" + engine.NewUUID()[:8] }

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
	p.cmd = exec.Command(binary, append([]string{"-servers", zkc.ConnectString(), "-log-level", "info"}, args...)...)
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
		if errors.Is(err, zk.ErrNoNode) && n == 0 {
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
