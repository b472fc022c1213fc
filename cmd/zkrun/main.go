// Command zkrun runs a command while it holds a ZooKeeper recipe: a mutex,
// one lease of a semaphore, or the leadership of an election, as `etcdctl
// lock`/`elect` and `consul lock` do; or keeps it registered as an instance
// of a service (curator-x-discovery's layout, package discovery) while it
// runs. The hold is taken with the zkrecipes
// recipes, so Go services, Curator (Java) clients and zkrun contend for the
// same queue. It is a separate binary from the read-only zkinspect, so an
// operator can be given the inspector without the power to take locks.
//
// Install it with
//
//	go install github.com/zkrecipes/zkrecipes/cmd/zkrun@latest
//
// Usage:
//
//	zkrun [flags] lock  [flags] PATH    -- CMD [ARGS...]
//	zkrun [flags] sem   [flags] -n N PATH -- CMD [ARGS...]
//	zkrun [flags] elect [flags] PATH ID -- CMD [ARGS...]
//	zkrun [flags] register [flags] SERVICE -- CMD [ARGS...]
//
// register keeps CMD registered as an instance of SERVICE under -base
// (default /services, Spring Cloud's and Dubbo's) while it runs:
// Curator's JSON, a DYNAMIC (ephemeral) node made again if it goes (a
// session expiry), deleted when CMD ends; Java ServiceDiscovery clients,
// Spring Cloud and Dubbo find it. Its flags: -port N, -ssl-port N,
// -address (default: this host's first non-loopback IPv4 address), -id
// (default: a random UUID), -payload JSON (an object gets "@class" from
// -payload-class, default java.util.LinkedHashMap, as a Java reader needs
// it), -uri-spec (default {scheme}://{address}:{port}). A registration is
// not a hold: losing the session does not stop CMD (the instance is made
// again in the next session), so the status 121 does not apply.
//
// lock runs CMD while holding the mutex at PATH (mutex.New, Acquire). sem runs
// CMD while holding one lease of the semaphore at PATH with N leases
// (semaphore.New, Acquire); every user of the semaphore must give the same
// N. elect runs CMD while participant ID leads the election at PATH
// (election.NewLatch, Start, Await) and leaves the election when CMD ends.
//
// Flags come before the positional arguments, either before the subcommand
// or after it; everything after "--" is the command, run without a shell:
//
//	-servers host:port,...  the ensemble (default $ZK_SERVERS)
//	-namespace ns           prefix PATH with ns (recipes.WithNamespace)
//	-auth scheme:cred       authenticate, e.g. -auth digest:user:secret
//	-session-timeout d      session timeout asked of the server (default 10s)
//	-connect-timeout d      wait this long for a session (default 15s)
//	-tls                    connect over TLS (implied by the other -tls flags)
//	-tls-ca file            trust the CAs in this PEM file (default: the system's)
//	-tls-cert, -tls-key f   the client certificate and its key, PEM (ssl.clientAuth=need)
//	-tls-server-name name   check the servers' certificates for name
//	                        (default: the host dialled); with no -tls flag, the
//	                        PEM settings of zookeeper.client.secure=true in
//	                        $CLIENT_JVMFLAGS apply (see docs/security.md)
//	-log-level level        log to stderr: debug, info, warn, error (default error)
//	-timeout d              give up when the hold is not taken within d (default: wait)
//	-try                    do not wait: give up at once if the hold is taken (lock, sem)
//	-grace d                after SIGTERM, wait d before SIGKILL (default 10s)
//	-n N                    sem: the number of leases
//	-base, -port, -ssl-port, -address, -id, -payload, -payload-class, -uri-spec
//	                        register: see above
//
// # The command's environment
//
// The command inherits zkrun's environment, stdin, stdout and stderr, plus:
//
//	ZKRUN_TOKEN      the hold's fencing token: the czxid of its node, in decimal
//	                 (recipes.FenceToken.Czxid); it strictly increases across
//	                 successive holders of PATH, so a store can refuse an older one
//	ZKRUN_TOKEN_HEX  the token as recipes.FenceToken.String prints it ("0x1a")
//	ZKRUN_NODE       the server path of the hold's node (the namespace included)
//	ZKRUN_PATH       PATH, as given
//	ZKRUN_ID         elect: ID; register: the instance id
//
// register sets ZKRUN_NODE (the instance's server path), ZKRUN_PATH
// (-base/SERVICE) and ZKRUN_ID, not the token variables.
//
// # Losing the hold
//
// When the hold may be gone (its Done channel closes: the session is lost,
// or the connection is suspended under the default error policy), the
// command is no longer protected: zkrun sends SIGTERM to its process group,
// then SIGKILL after -grace, and exits with status 121 whatever the command
// returned. The command runs in a process group of its own, so its children
// get the signals too (and a terminal's ^C reaches it only through zkrun).
//
// SIGINT, SIGTERM and SIGHUP sent to zkrun while the command runs are
// forwarded to the command's process group; zkrun then releases the hold and
// exits with the command's status. Before the command starts they end the
// wait, and zkrun exits with 128+signal.
//
// # Exit status
//
//	0-255  the command's exit status; 128+N when signal N killed it, as shells say
//	120    usage: bad flags or arguments
//	121    the hold was lost while the command ran (it was sent SIGTERM)
//	122    -try: the hold is taken by someone else (the lock is held, no lease is free)
//	124    -timeout elapsed before the hold was taken (as timeout(1))
//	125    no session, or ZooKeeper failed otherwise (the message says why)
//	126    the command could not be started
//	127    the command was not found
//	128+N  zkrun got signal N before the command started
//
// A command's own status may be any of these numbers too; a caller that
// must tell them apart keeps its command's statuses below 120.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/cli"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// The exit statuses of zkrun itself (see the package doc).
const (
	ExitUsage       = 120
	ExitLost        = 121
	ExitHeld        = 122
	ExitTimeout     = 124
	ExitError       = 125
	ExitCannotRun   = 126
	ExitNotFound    = 127
	exitSignalBase  = 128
	releaseTimeout  = 10 * time.Second
	defaultGrace    = 10 * time.Second
	subcommandNames = "lock, sem, elect or register"
)

const usageText = `usage:
  zkrun [flags] lock  [flags] PATH    -- CMD [ARGS...]
  zkrun [flags] sem   [flags] -n N PATH -- CMD [ARGS...]
  zkrun [flags] elect [flags] PATH ID -- CMD [ARGS...]
  zkrun [flags] register [flags] SERVICE -- CMD [ARGS...]

Runs CMD while holding the mutex at PATH (lock), one of N leases of the
semaphore at PATH (sem), or the leadership of the election at PATH as
participant ID (elect). CMD gets SIGTERM, then SIGKILL after -grace, when
the hold may be lost. register keeps CMD registered as an instance of
SERVICE under -base (curator-x-discovery's JSON) while it runs.

CMD's environment adds:
  ZKRUN_TOKEN      fencing token: the czxid of the hold's node, decimal
  ZKRUN_TOKEN_HEX  the token as ZooKeeper prints zxids ("0x1a")
  ZKRUN_NODE       server path of the hold's node
  ZKRUN_PATH       PATH
  ZKRUN_ID         elect: ID; register: the instance id

Exit status:
  0-255  CMD's status (128+N when signal N killed it)
  120    usage error
  121    the hold was lost while CMD ran
  122    -try: the hold is taken by someone else
  124    -timeout elapsed before the hold was taken
  125    connection or ZooKeeper error
  126    CMD could not be started
  127    CMD not found
  128+N  zkrun got signal N before CMD started

Flags:
`

// config is the parsed command line.
type config struct {
	op      cli.Operator
	sub     string
	path    string
	id      string
	command []string
	timeout time.Duration
	try     bool
	grace   time.Duration
	n       int
	help    bool

	// register
	base, address, id0, payload, payloadClass, uriSpec string
	port, sslPort                                      int
	instance                                           *discovery.Instance
}

// registerRun defines the flags of the run itself on fs.
func (c *config) registerRun(fs *flag.FlagSet) {
	c.op.Register(fs)
	fs.DurationVar(&c.timeout, "timeout", 0, "give up when the hold is not taken within this long (default: wait)")
	fs.BoolVar(&c.try, "try", false, "do not wait: exit 122 at once if the hold is taken (lock, sem)")
	fs.DurationVar(&c.grace, "grace", defaultGrace, "after SIGTERM, wait this long before SIGKILL")
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses args (without the program name).
func parseArgs(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	global := newFlagSet("zkrun", stderr)
	subs := map[string]*flag.FlagSet{}
	// Every FlagSet is defined before any is parsed: a definition writes
	// the flag's default into the shared config.
	cfg.registerRun(global)
	for _, name := range []string{"lock", "sem", "elect", "register"} {
		fs := newFlagSet("zkrun "+name, stderr)
		cfg.registerRun(fs)
		if name == "sem" {
			fs.IntVar(&cfg.n, "n", 0, "sem: the number of leases (required; every user must give the same)")
		}
		if name == "register" {
			fs.StringVar(&cfg.base, "base", "/services", "register: the base path")
			fs.IntVar(&cfg.port, "port", 0, "register: the port (none when 0)")
			fs.IntVar(&cfg.sslPort, "ssl-port", 0, "register: the SSL port (none when 0)")
			fs.StringVar(&cfg.address, "address", "", "register: the address (default: this host's first non-loopback IPv4 address)")
			fs.StringVar(&cfg.id0, "id", "", "register: the instance id (default: a random UUID)")
			fs.StringVar(&cfg.payload, "payload", "", "register: the payload, JSON")
			fs.StringVar(&cfg.payloadClass, "payload-class", "", "register: the Java class of an object payload (default java.util.LinkedHashMap)")
			fs.StringVar(&cfg.uriSpec, "uri-spec", "{scheme}://{address}:{port}", "register: the URI template")
		}
		subs[name] = fs
	}
	if err := global.Parse(args); err != nil {
		return cfg, usageErr(&cfg, err)
	}
	rest := global.Args()
	if len(rest) == 0 {
		global.Usage()
		return cfg, fmt.Errorf("%w: want a subcommand: %s", cli.ErrUsage, subcommandNames)
	}
	cfg.sub = rest[0]
	fs, ok := subs[cfg.sub]
	if !ok {
		return cfg, fmt.Errorf("%w: unknown subcommand %q: want %s", cli.ErrUsage, cfg.sub, subcommandNames)
	}
	if err := fs.Parse(rest[1:]); err != nil {
		return cfg, usageErr(&cfg, err)
	}
	rest = fs.Args()
	npos := 1
	what := "PATH"
	switch cfg.sub {
	case "elect":
		npos, what = 2, "PATH ID"
	case "register":
		what = "SERVICE"
	}
	dash := -1
	for i, a := range rest {
		if a == "--" {
			dash = i
			break
		}
	}
	if dash < 0 {
		// The flag package ate a "--" that came before the positionals.
		return cfg, fmt.Errorf("%w: zkrun %s: want %s -- CMD [ARGS...]", cli.ErrUsage, cfg.sub, what)
	}
	pos := rest[:dash]
	cfg.command = rest[dash+1:]
	for _, p := range pos {
		if len(p) > 1 && p[0] == '-' {
			return cfg, fmt.Errorf("%w: flag %s after %s: flags go before the positional arguments", cli.ErrUsage, p, what)
		}
	}
	if len(pos) != npos {
		return cfg, fmt.Errorf("%w: zkrun %s: want %s before --, got %d arguments", cli.ErrUsage, cfg.sub, what, len(pos))
	}
	if len(cfg.command) == 0 {
		return cfg, fmt.Errorf("%w: zkrun %s: no command after --", cli.ErrUsage, cfg.sub)
	}
	cfg.path = pos[0]
	if cfg.sub == "register" {
		if err := cfg.parseRegister(); err != nil {
			return cfg, err
		}
	} else if err := recipes.ValidatePath(cfg.path); err != nil {
		return cfg, fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	if cfg.sub == "elect" {
		cfg.id = pos[1]
		if cfg.try {
			return cfg, fmt.Errorf("%w: zkrun elect: -try is for lock and sem (use -timeout)", cli.ErrUsage)
		}
	}
	if cfg.sub == "sem" && cfg.n < 1 {
		return cfg, fmt.Errorf("%w: zkrun sem: -n N (the number of leases, at least 1) is required", cli.ErrUsage)
	}
	if cfg.timeout < 0 || cfg.grace < 0 {
		return cfg, fmt.Errorf("%w: -timeout and -grace must not be negative", cli.ErrUsage)
	}
	if err := cfg.op.Resolve(getenv); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// parseRegister checks register's arguments and makes the instance.
func (c *config) parseRegister() error {
	if c.try {
		return fmt.Errorf("%w: zkrun register: -try is for lock and sem", cli.ErrUsage)
	}
	if err := recipes.ValidatePath(c.base); err != nil {
		return fmt.Errorf("%w: -base: %w", cli.ErrUsage, err)
	}
	if c.path == "" || strings.ContainsRune(c.path, '/') {
		return fmt.Errorf("%w: zkrun register: SERVICE %q is not a node name", cli.ErrUsage, c.path)
	}
	if c.port < 0 || c.port > 65535 || c.sslPort < 0 || c.sslPort > 65535 {
		return fmt.Errorf("%w: -port and -ssl-port go from 0 (none) to 65535", cli.ErrUsage)
	}
	if c.id0 == "" {
		c.id0 = zkpath.NewUUID()
	}
	if c.address == "" {
		c.address = recipeargs.LocalIP()
	}
	in := &discovery.Instance{Name: c.path, ID: c.id0, Address: c.address, Port: c.port, SSLPort: c.sslPort}
	if c.payload != "" {
		p, err := discovery.EncodePayload(json.RawMessage(c.payload), c.payloadClass)
		if err != nil {
			return fmt.Errorf("%w: -payload: %w", cli.ErrUsage, err)
		}
		in.Payload = p
	}
	if c.uriSpec != "" {
		u, err := discovery.ParseURISpec(c.uriSpec)
		if err != nil {
			return fmt.Errorf("%w: -uri-spec: %w", cli.ErrUsage, err)
		}
		in.URISpec = u
	}
	c.instance = in
	return nil
}

func usageErr(cfg *config, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		cfg.help = true
		return nil
	}
	return fmt.Errorf("%w: %w", cli.ErrUsage, err)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stderr, os.Getenv))
}

// hold is a taken lock, lease or leadership, whichever the subcommand took.
type hold struct {
	node    string
	done    <-chan struct{}
	token   func(context.Context) (recipes.FenceToken, error)
	release func(context.Context) error
}

// run is the whole command; it returns the exit status.
func run(args []string, stderr io.Writer, getenv func(string) string) int {
	cfg, err := parseArgs(args, getenv, stderr)
	if cfg.help && err == nil {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "zkrun:", err)
		return ExitUsage
	}
	log := cfg.op.Logger(stderr)

	// Signals: before the command starts they end the wait; after, they
	// are forwarded to it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waitDone := make(chan struct{})
	gotSig := make(chan os.Signal, 1)
	go func() {
		select {
		case s := <-sigs:
			cancel()
			gotSig <- s
		case <-waitDone:
			gotSig <- nil
		}
	}()
	// interrupted ends the wait's signal watcher (once) and says whether
	// a signal ended the wait.
	interrupted := func() (int, bool) {
		close(waitDone)
		if s := <-gotSig; s != nil {
			return exitSignalBase + signalNumber(s), true
		}
		return 0, false
	}

	c, err := cfg.op.Connect(ctx, log)
	if err != nil {
		if code, ok := interrupted(); ok {
			return code
		}
		fmt.Fprintln(stderr, "zkrun:", err)
		return ExitError
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer ccancel()
		if err := c.Close(cctx); err != nil {
			log.Warn("close the session", "err", err)
		}
	}()

	actx := ctx
	if cfg.timeout > 0 {
		var acancel context.CancelFunc
		actx, acancel = context.WithTimeout(ctx, cfg.timeout)
		defer acancel()
	}
	h, err := take(actx, c, cfg)
	// Stop the watcher before reading gotSig; a signal from here on is
	// read by the supervisor.
	if code, ok := interrupted(); ok {
		if err == nil {
			releaseHold(h, log)
		}
		return code
	}
	if err != nil {
		fmt.Fprintln(stderr, "zkrun:", err)
		switch {
		case errors.Is(err, recipes.ErrNotAcquired):
			return ExitHeld
		case errors.Is(err, context.DeadlineExceeded):
			return ExitTimeout
		default:
			return ExitError
		}
	}
	defer releaseHold(h, log)

	cmd := exec.Command(cfg.command[0], cfg.command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if h.token != nil {
		tctx, tcancel := context.WithTimeout(context.Background(), releaseTimeout)
		token, err := h.token(tctx)
		tcancel()
		if err != nil {
			fmt.Fprintln(stderr, "zkrun: read the fencing token:", err)
			return ExitError
		}
		log.Info("holding", "node", h.node, "token", token.String())
		cmd.Env = append(os.Environ(),
			"ZKRUN_TOKEN="+strconv.FormatInt(token.Czxid, 10),
			"ZKRUN_TOKEN_HEX="+token.String(),
			"ZKRUN_NODE="+h.node,
			"ZKRUN_PATH="+cfg.path,
		)
	} else {
		log.Info("registered", "node", h.node)
		cmd.Env = append(os.Environ(),
			"ZKRUN_NODE="+h.node,
			"ZKRUN_PATH="+zkpath.JoinPath(cfg.base, cfg.path),
		)
	}
	switch cfg.sub {
	case "elect":
		cmd.Env = append(cmd.Env, "ZKRUN_ID="+cfg.id)
	case "register":
		cmd.Env = append(cmd.Env, "ZKRUN_ID="+cfg.instance.ID)
	}
	newGroup(cmd)
	select {
	case <-h.done:
		fmt.Fprintln(stderr, "zkrun: the hold was lost before the command started")
		return ExitLost
	default:
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "zkrun:", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return ExitNotFound
		}
		return ExitCannotRun
	}
	return supervise(cmd, h, cfg.grace, sigs, log, stderr)
}

// supervise waits for cmd, forwarding zkrun's signals to its group, and
// stops it when the hold may be lost. It returns zkrun's exit status.
func supervise(cmd *exec.Cmd, h *hold, grace time.Duration, sigs <-chan os.Signal, log *slog.Logger, stderr io.Writer) int {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	done := h.done
	lost := false
	var kill <-chan time.Time
	for {
		select {
		case <-exited:
			if lost {
				// Nothing of the command's group may go on without the hold.
				_ = signalGroup(cmd, syscall.SIGKILL)
				return ExitLost
			}
			return exitStatus(cmd.ProcessState)
		case <-done:
			done = nil
			lost = true
			log.Error("the hold may be lost: stopping the command", "node", h.node, "grace", grace)
			fmt.Fprintf(stderr, "zkrun: the hold on %s may be lost: sending SIGTERM to the command\n", h.node)
			if err := signalGroup(cmd, syscall.SIGTERM); err != nil {
				log.Warn("SIGTERM", "err", err)
			}
			t := time.NewTimer(grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			fmt.Fprintf(stderr, "zkrun: the command outlived -grace %s: sending SIGKILL\n", grace)
			_ = signalGroup(cmd, syscall.SIGKILL)
		case s := <-sigs:
			log.Info("forwarding a signal to the command", "signal", s)
			if err := signalGroup(cmd, s); err != nil {
				log.Warn("forward", "signal", s, "err", err)
			}
		}
	}
}

func releaseHold(h *hold, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := h.release(ctx); err != nil {
		select {
		case <-h.done: // lost already: the release can only say so
			log.Debug("release", "node", h.node, "err", err)
		default:
			log.Warn("release", "node", h.node, "err", err)
		}
	}
}

// take takes the hold the subcommand names, within ctx.
func take(ctx context.Context, c *recipes.Client, cfg config) (*hold, error) {
	switch cfg.sub {
	case "lock":
		m, err := mutex.New(c, cfg.path)
		if err != nil {
			return nil, err
		}
		var l *mutex.Lease
		if cfg.try {
			l, err = m.TryAcquire(ctx)
		} else {
			l, err = m.Acquire(ctx)
		}
		if err != nil {
			return nil, err
		}
		return &hold{node: l.Node(), done: l.Done(), token: l.Token, release: l.Release}, nil
	case "sem":
		s, err := semaphore.New(c, cfg.path, cfg.n)
		if err != nil {
			return nil, err
		}
		var l *semaphore.Lease
		if cfg.try {
			l, err = s.TryAcquire(ctx)
		} else {
			l, err = s.Acquire(ctx)
		}
		if err != nil {
			return nil, err
		}
		return &hold{node: l.Node(), done: l.Done(), token: l.Token, release: l.Release}, nil
	case "elect":
		// A latch, not a Selector: Await takes a ctx, so -timeout and the
		// signals end the wait as they end Acquire's, and the Term gives Done,
		// Token and Node as a lease does. The command is run once, and Close
		// ends the leadership when it ends, which is a selector's
		// "lead while the function runs" without a callback.
		l, err := election.NewLatch(c, cfg.path, cfg.id)
		if err != nil {
			return nil, err
		}
		if err := l.Start(ctx); err != nil {
			return nil, err
		}
		t, err := l.Await(ctx)
		if err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
			defer cancel()
			_ = l.Close(cctx)
			return nil, err
		}
		return &hold{node: t.Node(), done: t.Done(), token: t.Token, release: l.Close}, nil
	case "register":
		// Not a hold: the registration outlives a lost session (made again
		// in the next one), so done never closes and there is no token.
		d, err := discovery.New(c, cfg.base)
		if err != nil {
			return nil, err
		}
		if err := d.Start(ctx); err != nil {
			return nil, err
		}
		if err := d.Register(ctx, cfg.instance); err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
			defer cancel()
			_ = d.Close(cctx)
			return nil, err
		}
		full, err := c.FullPath(zkpath.JoinPath(zkpath.JoinPath(cfg.base, cfg.path), cfg.instance.ID))
		if err != nil {
			return nil, err
		}
		return &hold{node: full, release: d.Close}, nil
	}
	return nil, fmt.Errorf("%w: unknown subcommand %q", cli.ErrUsage, cfg.sub)
}
