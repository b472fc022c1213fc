package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
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
	count          string // a SharedCount path, or a number, or ""
	summary        bool
	watch          bool
	json           bool
	timeout        time.Duration
	connectTimeout time.Duration
	help           bool
}

func parseFlags(args []string, envServers string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("zkinspect", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	servers := fs.String("servers", envServers, "ZooKeeper servers, host:port[,host:port...] (default $ZK_SERVERS)")
	fs.StringVar(&cfg.count, "count", "", "a semaphore's maximum: the path of its SharedCount, or a number")
	fs.BoolVar(&cfg.summary, "summary", false, "summarise every lock under the path")
	fs.BoolVar(&cfg.watch, "watch", false, "redraw on every change until interrupted")
	fs.BoolVar(&cfg.json, "json", false, "print JSON (one document per line with -watch)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "give up on a one-shot inspection after this long")
	fs.DurationVar(&cfg.connectTimeout, "connect-timeout", 10*time.Second, "how long to wait for a session")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: zkinspect [flags] <path>")
		fmt.Fprintln(fs.Output(), "Shows the holders and waiters of a lock, read/write lock, semaphore or leader latch (read-only).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			cfg.help = true
			return cfg, nil
		}
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return cfg, fmt.Errorf("%w: want exactly one path, got %d arguments", errUsage, fs.NArg())
	}
	cfg.path = fs.Arg(0)
	if cfg.path != "/" {
		if err := recipes.ValidatePath(cfg.path); err != nil {
			return cfg, fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	for _, s := range strings.Split(*servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.servers = append(cfg.servers, s)
		}
	}
	if len(cfg.servers) == 0 {
		return cfg, fmt.Errorf("%w: no servers: give -servers host:port[,...] or set ZK_SERVERS", errUsage)
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

// connect opens a session; zkinspect sends read requests only.
func connect(cfg config) (*recipes.Client, error) {
	c, err := recipes.Connect(context.Background(), cfg.servers,
		recipes.WithSessionTimeout(10*time.Second),
		recipes.WithConnectTimeout(cfg.connectTimeout))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", strings.Join(cfg.servers, ","), err)
	}
	return c, nil
}
