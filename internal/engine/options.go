package engine

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// Option configures a Client (package recipes wraps each). Constructors validate options and return an
// error wrapping ErrInvalidArgument for a bad one.
type Option func(*Config) error

type authInfo struct {
	scheme string
	auth   []byte
}

// Config is a Client's configuration, built from Options.
type Config struct {
	sessionTimeout time.Duration
	connectTimeout time.Duration
	dialer         zk.Dialer
	hostProvider   zk.HostProvider
	zkLogger       zk.Logger
	maxBufferSize  int
	logger         *slog.Logger
	namespace      string
	acl            ACLProvider
	auth           []authInfo
	retry          func() backoff.BackOff
	errorPolicy    ErrorPolicy
	wire           *Wire
	noContainers   bool
	metrics        Metrics
	metricsPath    func(recipe, path string) string
}

// DefaultSessionTimeout is the session timeout requested when
// WithSessionTimeout is not given.
const DefaultSessionTimeout = 15 * time.Second

func buildConfig(opts []Option) (Config, error) {
	cfg := Config{
		sessionTimeout: DefaultSessionTimeout,
		connectTimeout: 15 * time.Second,
		logger:         discardLogger,
		acl:            DefaultACLProvider,
	}
	for _, o := range opts {
		if o == nil {
			return cfg, fmt.Errorf("%w: nil option", ErrInvalidArgument)
		}
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	if cfg.retry == nil {
		limit := 2 * cfg.sessionTimeout
		cfg.retry = func() backoff.BackOff { return DefaultRetryPolicy(limit) }
	}
	return cfg, nil
}

// DefaultRetryPolicy is an exponential backoff from 10ms to 1s that gives
// up after limit (0 means never).
func DefaultRetryPolicy(limit time.Duration) backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 10 * time.Millisecond
	b.MaxInterval = time.Second
	b.MaxElapsedTime = limit
	b.Reset()
	return b
}

// WithSessionTimeout sets the session timeout requested from the server
// (the server clamps it to [2, 20] × its tickTime).
func WithSessionTimeout(d time.Duration) Option {
	return func(c *Config) error {
		if d < time.Millisecond {
			return fmt.Errorf("%w: session timeout %v (want at least 1ms; the server clamps it to 2-20 ticks)", ErrInvalidArgument, d)
		}
		c.sessionTimeout = d
		return nil
	}
}

// WithConnectTimeout sets how long Connect and NewClient wait for the first
// session; 0 means do not wait (the Client starts LATENT).
func WithConnectTimeout(d time.Duration) Option {
	return func(c *Config) error {
		if d < 0 {
			return fmt.Errorf("%w: connect timeout %v (want 0, do not wait, or more)", ErrInvalidArgument, d)
		}
		c.connectTimeout = d
		return nil
	}
}

// WithDialer sets the function go-zookeeper dials servers with.
func WithDialer(d zk.Dialer) Option {
	return func(c *Config) error {
		if d == nil {
			return fmt.Errorf("%w: nil dialer", ErrInvalidArgument)
		}
		c.dialer = d
		return nil
	}
}

// WithHostProvider sets go-zookeeper's host provider (server selection).
func WithHostProvider(hp zk.HostProvider) Option {
	return func(c *Config) error {
		if hp == nil {
			return fmt.Errorf("%w: nil host provider", ErrInvalidArgument)
		}
		c.hostProvider = hp
		return nil
	}
}

// WithZKLogger sends go-zookeeper's own log lines to l instead of to the
// client's slog logger at debug level.
func WithZKLogger(l zk.Logger) Option {
	return func(c *Config) error {
		c.zkLogger = l
		return nil
	}
}

// WithMaxBufferSize limits the size of a packet go-zookeeper accepts.
func WithMaxBufferSize(n int) Option {
	return func(c *Config) error {
		if n < 0 {
			return fmt.Errorf("%w: max buffer size %d (want 0, the default, or more)", ErrInvalidArgument, n)
		}
		c.maxBufferSize = n
		return nil
	}
}

// WithLogger sets the structured logger. The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidArgument)
		}
		c.logger = l
		return nil
	}
}

// WithNamespace prefixes every recipe path with ns, like Curator's
// namespace: with namespace "app", a lock at "/locks/a" lives at
// "/app/locks/a". ns may be given with or without its leading slash.
func WithNamespace(ns string) Option {
	return func(c *Config) error {
		if ns == "" || ns == "/" {
			c.namespace = ""
			return nil
		}
		if !strings.HasPrefix(ns, "/") {
			ns = "/" + ns
		}
		if err := ValidatePath(ns); err != nil {
			return fmt.Errorf("%w: namespace: %w", ErrInvalidArgument, err)
		}
		c.namespace = ns
		return nil
	}
}

// WithACLProvider sets the ACLs of the nodes recipes create.
func WithACLProvider(p ACLProvider) Option {
	return func(c *Config) error {
		if p == nil {
			return fmt.Errorf("%w: nil ACL provider", ErrInvalidArgument)
		}
		c.acl = p
		return nil
	}
}

// WithAuth adds authentication info sent right after connecting, for
// example WithAuth("digest", []byte("user:secret")).
func WithAuth(scheme string, auth []byte) Option {
	return func(c *Config) error {
		if scheme == "" {
			return fmt.Errorf("%w: empty auth scheme", ErrInvalidArgument)
		}
		c.auth = append(c.auth, authInfo{scheme, append([]byte(nil), auth...)})
		return nil
	}
}

// WithRetryPolicy sets the backoff used to retry requests that failed with
// a transient connection error. newBackOff is called once per operation,
// and what it returns is Reset before its first wait, as cenkalti's Retry
// does.
func WithRetryPolicy(newBackOff func() backoff.BackOff) Option {
	return func(c *Config) error {
		if newBackOff == nil {
			return fmt.Errorf("%w: nil retry policy", ErrInvalidArgument)
		}
		c.retry = newBackOff
		return nil
	}
}

// WithErrorPolicy chooses which connection states end a hold.
func WithErrorPolicy(p ErrorPolicy) Option {
	return func(c *Config) error {
		if p != PolicyStandard && p != PolicySession {
			return fmt.Errorf("%w: error policy %d (want PolicyStandard or PolicySession)", ErrInvalidArgument, p)
		}
		c.errorPolicy = p
		return nil
	}
}

// WithWire tells NewClient the Wire its connection was dialled through
// (zk.WithDialer(w.Dial)), so that it knows the negotiated session timeout
// and the time of the last byte received, as a Client made by Connect
// does. Connect ignores it: it always dials through a Wire of its own.
func WithWire(w *Wire) Option {
	return func(c *Config) error {
		if w == nil {
			return fmt.Errorf("%w: nil wire", ErrInvalidArgument)
		}
		c.wire = w
		return nil
	}
}

// WithoutContainers makes the recipes create their parent nodes as
// persistent nodes instead of containers, as Curator's
// dontUseContainerParents does: for servers that refuse containers (older
// than 3.5.3). Nothing then removes parents left empty: run a
// cleanup.Reaper.
func WithoutContainers() Option {
	return func(c *Config) error {
		c.noContainers = true
		return nil
	}
}

// ACLProvider chooses the ACL list for a node about to be created.
type ACLProvider interface {
	ACLFor(path string) []zk.ACL
}

// ACLProviderFunc adapts a function to ACLProvider.
type ACLProviderFunc func(path string) []zk.ACL

// ACLFor calls f.
func (f ACLProviderFunc) ACLFor(path string) []zk.ACL { return f(path) }

// DefaultACLProvider gives every node world:anyone with all permissions,
// as Curator's default does.
var DefaultACLProvider ACLProvider = ACLProviderFunc(func(string) []zk.ACL {
	return zk.WorldACL(zk.PermAll)
})
