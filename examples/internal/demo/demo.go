// Package demo holds the start-up code the recipe examples share: finding
// a ZooKeeper (ZK_SERVERS, else a server started with zktest.Launch: a
// local one, or one in Docker through zkdocker), connecting sessions,
// printing with a timestamp, and the one-line verdict every example ends
// with.
package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	gopath "path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	_ "github.com/zkrecipes/zkrecipes/recipes/zktest/zkdocker" // Launch may start a container
)

// VerdictOK and VerdictFailed start an example's last line.
const (
	VerdictOK     = "verdict: OK: "
	VerdictFailed = "verdict: FAILED: "
)

// Env names the demo's ZooKeeper ("host:port,host:port"); when it is unset
// the demo starts a local server and stops it at exit.
const Env = "ZK_SERVERS"

// Main runs an example: it parses the command line (if the caller has not
// yet: call flag.Parse first to compute limit from flags), finds a
// ZooKeeper, and calls run with a context that ends at ctrl-C or after
// limit. run's error, or a failed verdict, exits with status 1.
func Main(limit time.Duration, run func(ctx context.Context, servers []string) error) {
	if !flag.Parsed() {
		flag.Parse()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, limit) // never hang
	servers, shutdown, err := ZooKeeper()
	if err == nil {
		err = run(ctx, servers)
		shutdown()
	}
	cancel()
	stop()
	if err != nil {
		var v verdictError
		if !errors.As(err, &v) {
			fmt.Fprintln(os.Stderr, "error:", err)
			fmt.Println(VerdictFailed + err.Error())
		}
		os.Exit(1)
	}
}

// ZooKeeper returns the servers to use and a function that stops the one
// this program started, if any.
func ZooKeeper() ([]string, func(), error) {
	if env := strings.TrimSpace(os.Getenv(Env)); env != "" {
		Say("using ZooKeeper at %s", env)
		return strings.Split(env, ","), func() {}, nil
	}
	Say("%s is unset: starting a local ZooKeeper...", Env)
	cl, err := zktest.Launch(1)
	if err != nil {
		return nil, nil, err
	}
	Say("local ZooKeeper listening on %s", cl.ConnectString())
	return cl.Servers(), func() { cl.Close() }, nil
}

// Connect opens a session (each actor of a demo has its own, as separate
// processes would).
func Connect(servers []string, sessionTimeout time.Duration, opts ...recipes.Option) (*recipes.Client, error) {
	opts = append([]recipes.Option{recipes.WithSessionTimeout(sessionTimeout)}, opts...)
	return recipes.Connect(context.Background(), servers, opts...)
}

var (
	start = time.Now()
	outMu sync.Mutex
)

// Say prints a line prefixed with the time since the program started.
func Say(format string, args ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Printf("%6.2fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

// verdictError is a failed verdict, already printed.
type verdictError struct{ msg string }

func (e verdictError) Error() string { return e.msg }

// Verdict prints the example's last line and returns nil when ok, or an
// error (that Main does not print again) when not.
func Verdict(ok bool, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	outMu.Lock()
	defer outMu.Unlock()
	if ok {
		fmt.Println(VerdictOK + msg)
		return nil
	}
	fmt.Println(VerdictFailed + msg)
	return verdictError{msg}
}

// DeleteTree deletes path and everything under it (a demo's own data from
// an earlier run); a missing path is fine.
func DeleteTree(c *recipes.Client, path string) error {
	kids, _, err := c.Children(context.Background(), path)
	if errors.Is(err, recipes.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := DeleteTree(c, gopath.Join(path, k)); err != nil {
			return err
		}
	}
	if err := c.Delete(context.Background(), path, -1); err != nil && !errors.Is(err, recipes.ErrNoNode) {
		return err
	}
	return nil
}

// Setup connects an admin Client (4 s session) and gives the demo a fresh
// base path: whatever an earlier run left under it is deleted, and it is
// created with its missing parents. The caller closes the Client.
func Setup(servers []string, base string) (*recipes.Client, error) {
	admin, err := Connect(servers, 4*time.Second)
	if err != nil {
		return nil, err
	}
	if err := DeleteTree(admin, base); err != nil {
		admin.Close(context.Background())
		return nil, err
	}
	if err := EnsurePath(admin, base); err != nil {
		admin.Close(context.Background())
		return nil, err
	}
	return admin, nil
}

// EnsurePath creates path (persistent) and its missing parents as
// containers, so that once a demo deletes its base path nothing of it is
// left: the server removes the emptied parents.
func EnsurePath(c *recipes.Client, path string) error {
	if _, err := c.CreateWithParents(context.Background(), path, nil, 0); err != nil && !errors.Is(err, recipes.ErrNodeExists) {
		return err
	}
	return nil
}

// Pause sleeps for d (a demo's pacing), or less if ctx ends.
func Pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
