package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// errUsage marks a command-line mistake (exit status 2).
var errUsage = errors.New("usage")

// config is the parsed command line.
type config struct {
	servers        []string
	path           string
	namespace      string
	authScheme     string
	auth           []byte
	count          string // a SharedCount path, or a number, or ""
	summary        bool
	watch          bool
	json           bool
	timeout        time.Duration
	connectTimeout time.Duration
	help           bool
}

// newFlagSet defines the flags into cfg; servers and auth are parsed after.
func newFlagSet(cfg *config, servers, auth *string) *flag.FlagSet {
	fs := flag.NewFlagSet("zkinspect", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags reports errors; -h prints usage itself
	fs.StringVar(servers, "servers", "", "the ensemble: `host:port,...` (default: $ZK_SERVERS)")
	fs.StringVar(&cfg.namespace, "namespace", "", "the recipes' namespace `ns` (recipes.WithNamespace): <path> and -count are inside it")
	fs.StringVar(auth, "auth", "", "authenticate the session with `scheme:credentials` (digest:user:password)")
	fs.StringVar(&cfg.count, "count", "", "a semaphore's maximum: the `path` of its SharedCount, or a number")
	fs.BoolVar(&cfg.summary, "summary", false, "summarise every lock under the path")
	fs.BoolVar(&cfg.watch, "watch", false, "redraw on every change until interrupted")
	fs.BoolVar(&cfg.json, "json", false, "print JSON (one document per line with -watch)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "give up on a one-shot inspection after this long")
	fs.DurationVar(&cfg.connectTimeout, "connect-timeout", 10*time.Second, "how long to wait for a session")
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
// and after the path. -h writes the help to helpOut.
func parseFlags(args []string, envServers string, helpOut io.Writer) (config, error) {
	var cfg config
	var servers, auth string
	fs := newFlagSet(&cfg, &servers, &auth)
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
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["servers"] {
		servers = envServers
	}
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.servers = append(cfg.servers, s)
		}
	}
	if len(cfg.servers) == 0 {
		return cfg, fmt.Errorf("%w: no servers: give -servers host:port[,...] or set ZK_SERVERS", errUsage)
	}
	if cfg.namespace != "" {
		ns := "/" + strings.TrimPrefix(cfg.namespace, "/")
		if err := recipes.ValidatePath(ns); err != nil || ns == "/" {
			return cfg, fmt.Errorf("%w: -namespace %q: not a path", errUsage, cfg.namespace)
		}
		cfg.namespace = ns
	}
	if set["auth"] {
		scheme, cred, ok := strings.Cut(auth, ":")
		if !ok || scheme == "" || cred == "" {
			return cfg, fmt.Errorf("%w: -auth %q: want scheme:credentials (digest:user:password)", errUsage, auth)
		}
		cfg.authScheme, cfg.auth = scheme, []byte(cred)
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
	if cfg.timeout <= 0 || cfg.connectTimeout <= 0 {
		return cfg, fmt.Errorf("%w: timeouts must be positive", errUsage)
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

// connect opens a session; zkinspect sends read requests only.
func connect(cfg config) (*recipes.Client, error) {
	opts := []recipes.Option{
		recipes.WithSessionTimeout(10 * time.Second),
		recipes.WithConnectTimeout(cfg.connectTimeout),
	}
	if cfg.namespace != "" {
		opts = append(opts, recipes.WithNamespace(cfg.namespace))
	}
	if cfg.authScheme != "" {
		opts = append(opts, recipes.WithAuth(cfg.authScheme, cfg.auth))
	}
	c, err := recipes.Connect(context.Background(), cfg.servers, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", strings.Join(cfg.servers, ","), err)
	}
	return c, nil
}
