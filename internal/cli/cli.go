// Package cli holds the operator flags shared by the repository's commands
// (zkrun and zkinspect): the servers, namespace, digest auth, SASL
// (DIGEST-MD5 or Kerberos), TLS, session and connect timeouts, and the log
// level, and the Connect that uses them.
//
// The servers default to $ZK_SERVERS. That default is applied after the
// flags are parsed, so -h shows "$ZK_SERVERS" and not whatever the variable
// holds.
package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// EnvServers is the environment variable that names the servers when
// -servers is not given.
const EnvServers = "ZK_SERVERS"

// ErrUsage marks a command-line mistake.
var ErrUsage = errors.New("usage")

// Operator is the set of operator flags. Register binds them to a FlagSet;
// Resolve checks them after parsing.
type Operator struct {
	Servers        []string      // resolved by Resolve
	Namespace      string        // -namespace
	Auth           string        // -auth scheme:credentials
	SessionTimeout time.Duration // -session-timeout
	ConnectTimeout time.Duration // -connect-timeout
	LogLevel       string        // -log-level
	SASL           SASL          // -sasl and its flags (sasl.go)
	TLS            *tls.Config   // resolved by Resolve from the -tls flags or $CLIENT_JVMFLAGS; nil: plain

	servers string
	tls     tlsFlags
}

// Register defines the operator flags on fs. It may be called for several
// FlagSets with the same Operator (a command's global flags and a
// subcommand's), as long as every call comes before the first Parse: a
// flag's definition writes its default.
func (o *Operator) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.servers, "servers", "", "the ensemble, `host:port,...` (default $"+EnvServers+")")
	fs.StringVar(&o.Namespace, "namespace", "", "the recipes' namespace `ns` (recipes.WithNamespace): every path given is inside it")
	fs.StringVar(&o.Auth, "auth", "", "authenticate with `scheme:credentials`, e.g. digest:user:secret")
	fs.DurationVar(&o.SessionTimeout, "session-timeout", 10*time.Second, "the session timeout asked of the server (it clamps it to 2-20 ticks)")
	fs.DurationVar(&o.ConnectTimeout, "connect-timeout", 15*time.Second, "how long to wait for a session")
	fs.StringVar(&o.LogLevel, "log-level", "error", "log to stderr at this `level`: debug, info, warn, error")
	o.SASL.register(fs)
	o.tls.register(fs)
}

// Resolve checks the parsed flags and fills Servers, from -servers or else
// getenv(EnvServers). Its errors wrap ErrUsage.
func (o *Operator) Resolve(getenv func(string) string) error {
	s := o.servers
	if s == "" {
		s = getenv(EnvServers)
	}
	o.Servers = nil
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			o.Servers = append(o.Servers, h)
		}
	}
	if len(o.Servers) == 0 {
		return fmt.Errorf("%w: no servers: give -servers host:port[,...] or set %s", ErrUsage, EnvServers)
	}
	if o.Namespace != "" {
		ns := "/" + strings.TrimPrefix(o.Namespace, "/")
		if err := recipes.ValidatePath(ns); err != nil || ns == "/" {
			return fmt.Errorf("%w: -namespace %q: want a path such as myapp or /myapp", ErrUsage, o.Namespace)
		}
	}
	if o.Auth != "" {
		if scheme, cred, ok := strings.Cut(o.Auth, ":"); !ok || scheme == "" || cred == "" {
			return fmt.Errorf("%w: -auth %q: want scheme:credentials, e.g. digest:user:secret", ErrUsage, o.Auth)
		}
	}
	if err := o.SASL.resolve(getenv); err != nil {
		return err
	}
	if o.SessionTimeout <= 0 || o.ConnectTimeout <= 0 {
		return fmt.Errorf("%w: -session-timeout and -connect-timeout must be positive", ErrUsage)
	}
	if _, err := o.level(); err != nil {
		return err
	}
	var err error
	o.TLS, err = o.tls.resolve(getenv)
	return err
}

func (o *Operator) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return 0, fmt.Errorf("%w: -log-level %q: want debug, info, warn or error", ErrUsage, o.LogLevel)
	}
	return l, nil
}

// Logger returns a text logger writing to w (stderr, for a command) at the
// -log-level; by default only errors are logged.
func (o *Operator) Logger(w io.Writer) *slog.Logger {
	l, err := o.level()
	if err != nil {
		l = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// Connect opens a session with the operator's settings and logger.
func (o *Operator) Connect(ctx context.Context, log *slog.Logger) (*recipes.Client, error) {
	opts := []recipes.Option{
		recipes.WithSessionTimeout(o.SessionTimeout),
		recipes.WithConnectTimeout(o.ConnectTimeout),
		recipes.WithLogger(log),
	}
	if o.Namespace != "" {
		opts = append(opts, recipes.WithNamespace(o.Namespace))
	}
	if o.Auth != "" {
		scheme, cred, _ := strings.Cut(o.Auth, ":")
		opts = append(opts, recipes.WithAuth(scheme, []byte(cred)))
	}
	sasl, err := o.SASL.option()
	if err != nil {
		return nil, err
	}
	if sasl != nil {
		opts = append(opts, sasl)
	}
	if o.TLS != nil {
		opts = append(opts, recipes.WithTLS(o.TLS))
	}
	c, err := recipes.Connect(ctx, o.Servers, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", strings.Join(o.Servers, ","), err)
	}
	return c, nil
}
