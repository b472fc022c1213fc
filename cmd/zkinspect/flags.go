package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/cli"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// errUsage marks a command-line mistake (exit status 2).
var errUsage = cli.ErrUsage

// config is the parsed command line.
type config struct {
	op      cli.Operator // servers, namespace, auth, timeouts, log level
	path    string
	count   string // a SharedCount path, or a number, or ""
	v1      bool   // the path is a semaphore.V1 (its nodes look like a mutex's)
	summary bool
	watch   bool
	json    bool
	timeout time.Duration
	help    bool
}

// newFlagSet defines the flags into cfg: the operator flags zkrun has too,
// then zkinspect's own.
func newFlagSet(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("zkinspect", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags reports errors; -h prints usage itself
	cfg.op.Register(fs)
	fs.StringVar(&cfg.count, "count", "", "a semaphore's maximum: the `path` of its SharedCount, or a number")
	fs.BoolVar(&cfg.v1, "v1", false, "the path is a semaphore v1 (InterProcessSemaphore, semaphore.V1), whose nodes look like a mutex's: the first -count hold")
	fs.BoolVar(&cfg.summary, "summary", false, "summarise every lock under the path")
	fs.BoolVar(&cfg.watch, "watch", false, "redraw on every change until interrupted")
	fs.BoolVar(&cfg.json, "json", false, "print JSON (one document per line with -watch)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "give up on a one-shot inspection after this long")
	return fs
}

// usage writes the help of fs.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage: zkinspect [flags] <path> [flags]")
	fmt.Fprintln(w, "Shows the holders and waiters of a lock, read/write lock, semaphore or leader latch (read-only).")
	fmt.Fprintln(w, "Exit status: 0 done, 1 error, 2 bad usage, 3 partial (-summary skipped a subtree it may not read).")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parseFlags parses args (without the program name); flags may come before
// and after the path. getenv supplies $ZK_SERVERS. -h writes the help to
// helpOut.
func parseFlags(args []string, getenv func(string) string, helpOut io.Writer) (config, error) {
	var cfg config
	fs := newFlagSet(&cfg)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			cfg.help = true
			usage(helpOut, fs)
			return cfg, nil
		}
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	if len(pos) != 1 {
		return cfg, fmt.Errorf("%w: want exactly one path, got %d arguments", errUsage, len(pos))
	}
	cfg.path = pos[0]
	if err := recipes.ValidatePath(cfg.path); err != nil {
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := cfg.op.Resolve(getenv); err != nil {
		return cfg, err
	}
	if cfg.count != "" && !strings.HasPrefix(cfg.count, "/") {
		if n, err := strconv.Atoi(cfg.count); err != nil || n < 1 {
			return cfg, fmt.Errorf("%w: -count %q: want a SharedCount path or a positive number", errUsage, cfg.count)
		}
	} else if cfg.count != "" {
		if err := recipes.ValidatePath(cfg.count); err != nil {
			return cfg, fmt.Errorf("%w: -count: %w", errUsage, err)
		}
	}
	if cfg.timeout <= 0 {
		return cfg, fmt.Errorf("%w: -timeout must be positive", errUsage)
	}
	return cfg, nil
}

// parseInterleaved parses flags anywhere among args and returns the
// positional arguments in order: the flag package stops at the first
// positional, so parsing starts again after each one. After "--" every
// argument is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := args[:len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// connect opens a session with the operator flags; zkinspect sends read
// requests only.
func connect(ctx context.Context, cfg config) (*recipes.Client, error) {
	return cfg.op.Connect(ctx, cfg.op.Logger(os.Stderr))
}
