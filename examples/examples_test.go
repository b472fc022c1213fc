package examples

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
)

// examples are the recipe examples this test runs, with the flags that
// keep each run to a few seconds. A run's name is its example's, or the
// example's and a dash and a variant's.
var examples = []struct {
	name string
	args []string
}{
	{"mutex", nil},
	{"rwlock", []string{"-duration", "2s"}},
	{"semaphore", []string{"-duration", "2s"}},
	{"semaphore-v1", []string{"-duration", "2s", "-v1"}},
	{"latch", []string{"-duration", "2s", "-session-timeout", "1s"}},
	// The leader's write lands, and the cut loses its reply.
	{"latch-cut-mid-write", []string{"-duration", "2s", "-session-timeout", "1s", "-cut-mid-write"}},
	{"selector", []string{"-duration", "2s"}},
	{"reaper", []string{"-threshold", "1s"}},
	{"fenced", []string{"-session-timeout", "1s"}},
	{"metrics", nil},
	{"counter", nil},
	{"barrier", nil},
	{"queue", nil},
	{"cache", nil},
	{"cache-one-shot", []string{"-one-shot"}},
	{"discovery", nil},
	{"discovery-go-only", []string{"-go-only"}},
	{"group", nil},
}

// example is the directory, and the binary, of the example a run runs.
func example(name string) string {
	ex, _, _ := strings.Cut(name, "-")
	return ex
}

func goTool(t *testing.T) string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// TestExamples builds the recipe examples (with -race when this test runs
// with it) and runs each against one ZooKeeper server, named to them by
// ZK_SERVERS, checking that it exits 0 with an OK verdict as its last
// line.
func TestExamples(t *testing.T) {
	zkc := testutil.Server(t)

	bin := t.TempDir()
	args := []string{"build", "-o", bin + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	built := map[string]bool{}
	for _, ex := range examples {
		if dir := example(ex.name); !built[dir] {
			built[dir] = true
			args = append(args, "./"+dir)
		}
	}
	build := exec.Command(goTool(t), args...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}

	// Runs of one example use the same znodes, so they take turns.
	turns := map[string]*sync.Mutex{}
	for dir := range built {
		turns[dir] = new(sync.Mutex)
	}
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			turn := turns[example(ex.name)]
			turn.Lock()
			defer turn.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(bin, example(ex.name)), ex.args...)
			cmd.Env = append(os.Environ(), demo.Env+"="+zkc.ConnectString())
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			last := lines[len(lines)-1]
			if err != nil || !strings.HasPrefix(last, demo.VerdictOK) {
				t.Fatalf("%s %s: %v after %v; last line %q; output:\n%s", ex.name, strings.Join(ex.args, " "), err, time.Since(start).Round(time.Millisecond), last, out.String())
			}
			t.Logf("%s (%v): %s", ex.name, time.Since(start).Round(time.Millisecond), last)
		})
	}
}
