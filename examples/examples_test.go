package examples

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
)

// examples are the recipe examples this test runs, with the flags that
// keep each run to a few seconds.
var examples = []struct {
	name string
	args []string
}{
	{"mutex", nil},
	{"rwlock", []string{"-duration", "2s"}},
	{"semaphore", []string{"-duration", "2s"}},
	{"latch", []string{"-duration", "2s", "-session-timeout", "1s"}},
	{"selector", []string{"-duration", "2s"}},
	{"reaper", []string{"-threshold", "1s"}},
	{"fenced", []string{"-session-timeout", "1s"}},
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
	for _, ex := range examples {
		args = append(args, "./"+ex.name)
	}
	build := exec.Command(goTool(t), args...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}

	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(bin, ex.name), ex.args...)
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
