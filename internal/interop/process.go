package interop

// The contender processes StartCurator and StartKazoo run, and what a
// test reads from them.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proc is a running contender process started by StartCurator or
// StartKazoo. Its stdout is collected line by line for WaitLine and
// Output; the tail of its stderr is kept for error messages. The process
// runs in its own process group, is sent SIGKILL if the Go process dies
// (Linux), and is reaped in the background, so Wait may be called any
// number of times.
type Proc struct {
	// Name is "curator" or "kazoo" followed by the mode, for messages.
	Name string

	cmd   *exec.Cmd
	stdin interface {
		Write([]byte) (int, error)
		Close() error
	}

	mu       sync.Mutex
	lines    []string
	partial  []byte
	next     int           // first line not yet consumed by WaitLine
	changed  chan struct{} // closed and replaced whenever lines grow or the process exits
	stderr   []byte
	exited   bool
	waitErr  error
	doneChan chan struct{}
}

func start(ctx context.Context, kind, bin string, argv []string) (*Proc, error) {
	name := kind
	if len(argv) > 0 {
		// The mode is the first argument after the program file.
		for i, a := range argv {
			if strings.HasSuffix(a, CuratorSourceName) || strings.HasSuffix(a, KazooSourceName) {
				if i+1 < len(argv) {
					name = kind + " " + argv[i+1]
				}
				break
			}
		}
	}
	p := &Proc{Name: name, changed: make(chan struct{}), doneChan: make(chan struct{})}
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Env = os.Environ()
	setProcAttrs(cmd)
	cmd.Cancel = func() error { killGroup(cmd); return nil }
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdout = (*stdoutWriter)(p)
	cmd.Stderr = (*stderrWriter)(p)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("interop: %s stdin: %w", name, err)
	}
	p.stdin = in
	p.cmd = cmd
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("interop: start %s: %w", name, err)
	}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		if len(p.partial) > 0 {
			p.lines = append(p.lines, string(p.partial))
			p.partial = nil
		}
		p.exited = true
		p.waitErr = err
		p.signalLocked()
		p.mu.Unlock()
		close(p.doneChan)
	}()
	return p, nil
}

type stdoutWriter Proc

func (w *stdoutWriter) Write(b []byte) (int, error) {
	p := (*Proc)(w)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	grew := false
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		p.lines = append(p.lines, strings.TrimRight(string(p.partial[:i]), "\r"))
		p.partial = p.partial[i+1:]
		grew = true
	}
	if grew {
		p.signalLocked()
	}
	return len(b), nil
}

type stderrWriter Proc

func (w *stderrWriter) Write(b []byte) (int, error) {
	p := (*Proc)(w)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stderr = append(p.stderr, b...)
	if n := len(p.stderr); n > 2*stderrTail {
		p.stderr = append([]byte(nil), p.stderr[n-stderrTail:]...)
	}
	return len(b), nil
}

func (p *Proc) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Proc) stderrTailLocked() string {
	s := p.stderr
	if len(s) > stderrTail {
		s = s[len(s)-stderrTail:]
	}
	return strings.TrimSpace(string(s))
}

// WaitLine waits until the process prints a stdout line equal to want
// (surrounding white space ignored). Lines are consumed: each call scans
// only the lines after the one a previous WaitLine matched, so calling it
// twice for "ACQUIRED" waits for two such lines. It fails if ctx ends or
// the process exits first; the error carries the process's stderr tail.
func (p *Proc) WaitLine(ctx context.Context, want string) error {
	want = strings.TrimSpace(want)
	for {
		p.mu.Lock()
		for p.next < len(p.lines) {
			l := p.lines[p.next]
			p.next++
			if strings.TrimSpace(l) == want {
				p.mu.Unlock()
				return nil
			}
		}
		if p.exited {
			err := fmt.Errorf("interop: %s exited (%v) before printing %q; stdout:\n%s\nstderr:\n%s",
				p.Name, p.waitErr, want, strings.Join(p.lines, "\n"), p.stderrTailLocked())
			p.mu.Unlock()
			return err
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			p.mu.Lock()
			err := fmt.Errorf("interop: %s: waiting for %q: %w; stdout:\n%s\nstderr:\n%s",
				p.Name, want, ctx.Err(), strings.Join(p.lines, "\n"), p.stderrTailLocked())
			p.mu.Unlock()
			return err
		}
	}
}

// Send writes line and a newline to the process's stdin.
func (p *Proc) Send(line string) error {
	if _, err := p.stdin.Write([]byte(line + "\n")); err != nil {
		return fmt.Errorf("interop: %s: send %q: %w", p.Name, line, err)
	}
	return nil
}

// CloseStdin closes the process's stdin, which a holder treats as the
// release command and a mutex contender waiting for GO as an error.
func (p *Proc) CloseStdin() error {
	return p.stdin.Close()
}

// Wait waits for the process to exit and returns nil if it exited 0, else
// an error with the exit status and the tail of its stderr.
func (p *Proc) Wait() error {
	<-p.doneChan
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waitErr != nil {
		return fmt.Errorf("interop: %s: %w; stderr:\n%s", p.Name, p.waitErr, p.stderrTailLocked())
	}
	return nil
}

// Done returns a channel closed once the process has exited and been
// reaped.
func (p *Proc) Done() <-chan struct{} { return p.doneChan }

// Kill sends SIGKILL to the process's whole process group and waits for
// the process to be reaped. It is safe to call more than once and after
// the process exited.
func (p *Proc) Kill() {
	select {
	case <-p.doneChan:
		return // reaped: its pid may already belong to someone else
	default:
	}
	killGroup(p.cmd)
	<-p.doneChan
}

// Output returns everything the process printed on stdout so far.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.Write(p.partial)
	return b.String()
}

// Lines returns the stdout lines printed so far (a trailing line without a
// newline is included once the process has exited).
func (p *Proc) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Stderr returns the retained tail of the process's stderr.
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderrTailLocked()
}

// Interval is one lock hold as recorded by a mutex contender: Start is
// taken right after the acquire returned and End right before the release,
// both in wall-clock Unix nanoseconds. Who names the contender.
type Interval struct {
	Start, End int64
	Who        string
}

// ReadIntervals parses a mutex contender's output file: one "start end"
// line per hold and, when the contender finished, a final "done N" line,
// which must agree with the number of holds. Each interval gets Who = who.
func ReadIntervals(file, who string) ([]Interval, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("interop: %w", err)
	}
	defer f.Close()
	var out []Interval
	done := -1
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("interop: %s:%d: malformed line %q", file, n, line)
		}
		if fields[0] == "done" {
			d, err := strconv.Atoi(fields[1])
			if err != nil {
				return nil, fmt.Errorf("interop: %s:%d: %w", file, n, err)
			}
			done = d
			continue
		}
		if done >= 0 {
			return nil, fmt.Errorf("interop: %s:%d: hold recorded after %q", file, n, "done")
		}
		s, err1 := strconv.ParseInt(fields[0], 10, 64)
		e, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("interop: %s:%d: %w", file, n, err)
		}
		if e < s {
			return nil, fmt.Errorf("interop: %s:%d: end %d before start %d", file, n, e, s)
		}
		out = append(out, Interval{Start: s, End: e, Who: who})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("interop: %s: %w", file, err)
	}
	if done >= 0 && done != len(out) {
		return nil, fmt.Errorf("interop: %s: says done %d but records %d holds", file, done, len(out))
	}
	return out, nil
}

// CheckNoOverlap sorts iv by start time (in place) and returns an error
// describing the first pair of holds that overlap in time, i.e. where a
// hold starts before an earlier-starting hold has ended. Touching
// intervals do not overlap.
func CheckNoOverlap(iv []Interval) error {
	sort.SliceStable(iv, func(i, j int) bool { return iv[i].Start < iv[j].Start })
	latest := -1 // index of the hold with the greatest End so far
	for i := range iv {
		if latest >= 0 && iv[i].Start < iv[latest].End {
			a, b := iv[latest], iv[i]
			return fmt.Errorf("interop: holds overlap by %v: %s [%d, %d] and %s [%d, %d]",
				time.Duration(min(a.End, b.End)-b.Start), a.Who, a.Start, a.End, b.Who, b.Start, b.End)
		}
		if latest < 0 || iv[i].End > iv[latest].End {
			latest = i
		}
	}
	return nil
}
