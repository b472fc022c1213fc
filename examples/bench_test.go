package examples

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
)

// TestBenchScale runs the benchmark's scale scenario (examples/bench,
// -which scale) at a tiny size and 1x and 2x, with Curator beside where it
// is installed: every row runs, and the table and its RESULT lines come
// out.
func TestBenchScale(t *testing.T) {
	zkc := testutil.Server(t)
	bin := filepath.Join(t.TempDir(), "bench")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command(goTool(t), append(args, "./bench")...).CombinedOutput(); err != nil {
		t.Fatalf("go build ./bench: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-servers", zkc.ConnectString(), "-which", "scale", "-rounds", "1",
		"-scale-factors", "1,2", "-scale-instances", "20", "-scale-members", "6", "-scale-leaves", "200", "-scale-waiters", "20",
		"-scale-heap", "128", "-scale-peer-heap", "256", "-sessions", "4", "-readers", "10", "-session-timeout", "2s")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench -which scale: %v after %v; output:\n%s", err, time.Since(start).Round(time.Millisecond), out.String())
	}
	for _, want := range []string{
		"row=discovery measure=register-all-instances-one-after-another", "row=discovery measure=getInstance",
		"row=discovery measure=provider-start-until-it-holds-all", "row=discovery measure=a-new-instance-reaches-10-caches",
		"row=group measure=all-join-time-to-agreement", "row=group measure=a-members-expiry-reaches-all",
		"row=cache measure=load-time-to-initialized", "row=cache measure=heap-bytes-per-node",
		"row=waiters measure=time-per-hand-off", "row=waiters measure=server-packets-received-per-hand-off",
	} {
		if !strings.Contains(out.String(), "RESULT scenario=scale "+want+" ") {
			t.Errorf("no RESULT line for %s; output:\n%s", want, out.String())
		}
	}
	t.Logf("bench -which scale (%v): %s", time.Since(start).Round(time.Millisecond), lastLines(out.String(), 14))
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
