package election_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Close called from inside the lead function returns at once (Curator
// allows closing a LeaderSelector from takeLeadership): it cancels the
// function's ctx instead of waiting for the function, which is its caller.
func TestSelectorCloseFromLeadFunction(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	var s *election.Selector
	closed := make(chan error, 1)
	ended := make(chan error, 1)
	s, err := election.NewSelector(c, "/selclose", "me", func(lctx context.Context, _ *election.Term) error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		err := s.Close(cctx)
		if err == nil && time.Since(start) > time.Second {
			err = errors.New("Close waited")
		}
		closed <- err
		<-lctx.Done() // cancelled by Close
		ended <- lctx.Err()
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx))
	require.NoError(t, <-closed)
	assert.ErrorIs(t, <-ended, context.Canceled)
	eventually(t, 5*time.Second, "the node goes once the function returned", func() bool {
		ps, err := election.Participants(ctx, c, "/selclose")
		return err == nil && len(ps) == 0
	})
	require.NoError(t, s.Close(ctx), "a second Close")
}

const panicChildEnv = "ZKRECIPES_SELECTOR_PANIC_SERVERS"

// A panic in the lead function is not swallowed: it crashes the process,
// with its message and stack, as in any goroutine (it used to be logged,
// and only with a logger attached).
func TestSelectorLeadPanicIsNotSwallowed(t *testing.T) {
	if servers := os.Getenv(panicChildEnv); servers != "" {
		c, err := testutil.Dial(context.Background(), strings.Split(servers, ","))
		require.NoError(t, err)
		s, err := election.NewSelector(c, "/selpanic", "me", func(context.Context, *election.Term) error {
			panic("lead function boom")
		})
		require.NoError(t, err)
		require.NoError(t, s.Start(context.Background()))
		time.Sleep(time.Minute) // the panic ends the process before
		t.Fatal("the panic was swallowed")
	}
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSelectorLeadPanicIsNotSwallowed$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), panicChildEnv+"="+strings.Join(zkc.Servers(), ",")), testutil.TLSEnv(zkc.Servers())...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 2, exit.ExitCode(), "a Go panic's exit status")
	assert.Contains(t, string(out), "panic: lead function boom")
	assert.Contains(t, string(out), "TestSelectorLeadPanicIsNotSwallowed", "the stack names the lead function")
	assert.NotContains(t, string(out), "the panic was swallowed")
}
