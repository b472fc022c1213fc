package testutil

// The machinery of the multi-process tests (process_test.go in mutex,
// rwlock, semaphore and election): the test binary re-runs itself
// (os.Args[0] -test.run=^<helper test>$) with a role in the environment,
// the idiom Go's own os/exec tests use, and the test drives the helper
// over stdin and follows it on stdout.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Helpers describes how a package's tests re-run the test binary as a
// helper process.
type Helpers struct {
	// Test is the name of the helper test function, e.g.
	// "TestHelperProcess"; its body calls Run.
	Test string
	// RoleEnv is the environment variable that carries the role.
	RoleEnv string
	// Timeout is the helper's -test.timeout; 2 minutes if zero.
	Timeout time.Duration
}

// Run is the body of the helper test function. In the test process
// itself (RoleEnv unset) it returns at once. In a helper it runs the
// function of its role and exits: 0 on success, 2 with "helper <role>:
// ERROR: <err>" on stderr on failure. Exiting skips the testing package's
// epilogue on stdout (and the leak check of Main).
func (hs Helpers) Run(roles map[string]func() error) {
	role := os.Getenv(hs.RoleEnv)
	if role == "" {
		return
	}
	var err error
	if fn := roles[role]; fn != nil {
		err = fn()
	} else {
		err = fmt.Errorf("unknown %s=%q", hs.RoleEnv, role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "helper %s: ERROR: %v\n", role, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// EnvInt reads an integer from the environment variable name, for a
// helper's parameters.
func EnvInt(name string) (int, error) {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

// HelperProc is a running helper process with its stdout read line by
// line.
type HelperProc struct {
	// Name names the helper in messages.
	Name string
	// Cmd is the process; a test may signal Cmd.Process itself, e.g. to
	// kill it without waiting.
	Cmd *exec.Cmd

	stdin io.WriteCloser
	lines chan string // stdout lines; closed at EOF
	done  chan struct{}
	err   error // Wait's result, valid after done
	errb  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start re-runs the test binary as a helper named name with the given
// role and extra environment. The process is killed and reaped when the
// test ends, and its stderr is logged then if the test failed.
func (hs Helpers) Start(t *testing.T, name, role string, env ...string) *HelperProc {
	t.Helper()
	timeout := hs.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+hs.Test+"$", "-test.v=false", "-test.count=1", "-test.timeout="+timeout.String())
	cmd.Env = append(append(os.Environ(), hs.RoleEnv+"="+role), env...)
	if e := helperTLSEnv(env); e != "" { // the helper's clients present the cluster's certificate
		cmd.Env = append(cmd.Env, e)
	}
	h := &HelperProc{Name: name, Cmd: cmd, lines: make(chan string, 64), done: make(chan struct{}), errb: &lockedBuffer{}}
	cmd.Stderr = h.errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
		h.err = cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		h.Kill()
		if t.Failed() {
			if s := strings.TrimSpace(h.errb.String()); s != "" {
				t.Logf("helper %s stderr:\n%s", name, s)
			}
		}
	})
	return h
}

// Lines returns the helper's stdout lines, closed at EOF. Whoever reads
// it must keep reading, or the helper blocks once 64 lines wait.
func (h *HelperProc) Lines() <-chan string { return h.lines }

// Done returns a channel closed once the process has been reaped (after
// Lines is closed).
func (h *HelperProc) Done() <-chan struct{} { return h.done }

// Err returns the process's exit error; valid once Done is closed.
func (h *HelperProc) Err() error { return h.err }

// Stderr returns what the process has written on stderr so far.
func (h *HelperProc) Stderr() string { return h.errb.String() }

// Send writes line and a newline to the process's stdin.
func (h *HelperProc) Send(line string) error {
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		return fmt.Errorf("helper %s: send %q: %w", h.Name, line, err)
	}
	return nil
}

// Kill sends SIGKILL (unless the process has already been reaped) and
// waits until it has been reaped, discarding stdout not yet read.
func (h *HelperProc) Kill() {
	select {
	case <-h.done:
		return
	default:
	}
	_ = h.Cmd.Process.Kill()
	_ = h.stdin.Close()
	for range h.lines { // unblock the reader
	}
	<-h.done
}

// Wait discards the process's stdout, waits for it to exit, and returns
// its error with its stderr.
func (h *HelperProc) Wait(ctx context.Context) error {
	for {
		select {
		case _, ok := <-h.lines:
			if ok {
				continue
			}
			<-h.done
			if h.err != nil {
				return fmt.Errorf("helper %s: %w; stderr:\n%s", h.Name, h.err, h.errb.String())
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("helper %s: %w; stderr:\n%s", h.Name, ctx.Err(), h.errb.String())
		}
	}
}

// WaitLine returns the first stdout line that starts with prefix,
// discarding the lines before it. It fails, with the process's stderr, if
// ctx ends or the process exits first.
func (h *HelperProc) WaitLine(ctx context.Context, prefix string) (string, error) {
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				<-h.done
				return "", fmt.Errorf("helper %s exited (%v) before printing %q; stderr:\n%s", h.Name, h.err, prefix, h.errb.String())
			}
			if strings.HasPrefix(l, prefix) {
				return l, nil
			}
		case <-ctx.Done():
			return "", fmt.Errorf("helper %s: waiting for %q: %w; stderr:\n%s", h.Name, prefix, ctx.Err(), h.errb.String())
		}
	}
}

// Holder is what a helper that holds a lock-like recipe reported: its
// contest node, fencing token and negotiated session timeout.
type Holder struct {
	Node           string
	Token          int64
	SessionTimeout time.Duration
}

// HoldUntilParentGone is the body of a helper that holds until it is
// killed: it connects to servers with a 2s session, takes a hold with
// acquire (within 30s), prints the lines WaitHolder reads (ready last),
// and blocks until its stdin closes (the parent is gone), when it returns
// an error without releasing, like a crash.
func HoldUntilParentGone(servers []string, ready string, acquire func(ctx context.Context, c *recipes.Client) (recipes.Hold, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(context.Background(), servers, recipes.WithSessionTimeout(2*time.Second))
	if err != nil {
		return err
	}
	h, err := acquire(ctx, c)
	if err != nil {
		return err
	}
	tok, err := h.Token(ctx)
	if err != nil {
		return err
	}
	PrintHolder(h.Node(), tok.Czxid, c.SessionTimeout(), ready)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return errors.New("stdin closed: the parent is gone")
}

// PrintHolder prints, in a helper, the line WaitHolder reads, then ready
// on a line of its own: the helper holds node, with token, on a session
// of sessionTimeout.
func PrintHolder(node string, token int64, sessionTimeout time.Duration, ready string) {
	fmt.Printf("NODE %s %d %d\n", node, token, sessionTimeout.Milliseconds())
	fmt.Println(ready)
}

// WaitHolder waits for the lines PrintHolder prints and returns what they
// say. It fails the test if the helper's session timeout is above asked.
func (h *HelperProc) WaitHolder(ctx context.Context, t testing.TB, ready string, asked time.Duration) Holder {
	t.Helper()
	line, err := h.WaitLine(ctx, "NODE ")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WaitLine(ctx, ready); err != nil {
		t.Fatal(err)
	}
	var (
		hd Holder
		ms int64
	)
	if _, err := fmt.Sscanf(line, "NODE %s %d %d", &hd.Node, &hd.Token, &ms); err != nil {
		t.Fatalf("helper %s: parse %q: %v", h.Name, line, err)
	}
	hd.SessionTimeout = time.Duration(ms) * time.Millisecond
	if hd.SessionTimeout > asked {
		t.Fatalf("helper %s negotiated a %v session, asked for %v", h.Name, hd.SessionTimeout, asked)
	}
	return hd
}

// Acquired is what a waiter's acquisition returned, and when.
type Acquired[T any] struct {
	Value T
	Err   error
	At    time.Time
}

// KillHolder kills the helper, which holds with a session of
// sessionTimeout, and returns what the waiter got. The waiter must
// acquire without error within the session timeout plus 3 s of the kill
// (the server expires the dead session, then the waiter's watch fires).
// The helper is reaped before KillHolder returns.
func KillHolder[T any](t testing.TB, h *HelperProc, sessionTimeout time.Duration, got <-chan Acquired[T]) T {
	t.Helper()
	killed := time.Now()
	if err := h.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var r Acquired[T]
	limit := sessionTimeout + 3*time.Second
	select {
	case r = <-got:
	case <-time.After(limit + 5*time.Second):
		t.Fatalf("waiter did not acquire within %v of the kill", limit+5*time.Second)
	}
	if r.Err != nil {
		t.Fatalf("waiter: %v", r.Err)
	}
	wait := r.At.Sub(killed)
	t.Logf("waiter acquired %v after the kill (helper session timeout %v)", wait.Round(time.Millisecond), sessionTimeout)
	if wait > limit {
		t.Errorf("waiter acquired %v after the kill, want at most %v", wait, limit)
	}
	h.Kill()
	return r.Value
}
