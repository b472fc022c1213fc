package recipes

import (
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
)

// Option configures a Client. Connect and NewClient validate options and
// return an error wrapping ErrInvalidArgument for a bad one.
type Option func(*options) error

// options gathers a Client's options, for the engine to apply (and
// check) when the Client is made.
type options struct{ engine []engine.Option }

func engineOption(o engine.Option) Option {
	return func(c *options) error {
		c.engine = append(c.engine, o)
		return nil
	}
}

// DefaultSessionTimeout is the session timeout requested when
// WithSessionTimeout is not given.
const DefaultSessionTimeout = 15 * time.Second

// DefaultRetryPolicy is an exponential backoff from 10ms to 1s that gives
// up after limit (0 means never).
func DefaultRetryPolicy(limit time.Duration) backoff.BackOff { return engine.DefaultRetryPolicy(limit) }

// WithSessionTimeout sets the session timeout requested from the server
// (the server clamps it to [2, 20] × its tickTime).
func WithSessionTimeout(d time.Duration) Option { return engineOption(engine.WithSessionTimeout(d)) }

// WithConnectTimeout sets how long Connect and NewClient wait for the first
// session; 0 means do not wait (the Client starts LATENT).
func WithConnectTimeout(d time.Duration) Option { return engineOption(engine.WithConnectTimeout(d)) }

// WithDialer sets the function go-zookeeper dials servers with.
func WithDialer(d zk.Dialer) Option { return engineOption(engine.WithDialer(d)) }

// WithHostProvider sets go-zookeeper's host provider (server selection).
func WithHostProvider(hp zk.HostProvider) Option { return engineOption(engine.WithHostProvider(hp)) }

// WithZKLogger sends go-zookeeper's own log lines to l instead of to the
// client's slog logger at debug level.
func WithZKLogger(l zk.Logger) Option { return engineOption(engine.WithZKLogger(l)) }

// WithMaxBufferSize limits the size of a packet go-zookeeper accepts.
func WithMaxBufferSize(n int) Option { return engineOption(engine.WithMaxBufferSize(n)) }

// WithLogger sets the structured logger. The default discards everything.
// Errors that happen away from the caller (a background delete that keeps
// failing, a node recreated, a session declared lost) are logged at warn
// or error.
func WithLogger(l *slog.Logger) Option { return engineOption(engine.WithLogger(l)) }

// WithNamespace prefixes every recipe path with ns, like Curator's
// namespace: with namespace "app", a lock at "/locks/a" lives at
// "/app/locks/a". ns may be given with or without its leading slash.
func WithNamespace(ns string) Option { return engineOption(engine.WithNamespace(ns)) }

// WithACLProvider sets the ACLs of the nodes recipes create.
func WithACLProvider(p ACLProvider) Option {
	if p == nil {
		return engineOption(engine.WithACLProvider(nil))
	}
	return engineOption(engine.WithACLProvider(p))
}

// WithAuth adds authentication info sent right after connecting, for
// example WithAuth("digest", []byte("user:secret")).
func WithAuth(scheme string, auth []byte) Option { return engineOption(engine.WithAuth(scheme, auth)) }

// WithRetryPolicy sets the backoff used to retry requests that failed with
// a transient connection error. newBackOff is called once per operation,
// and what it returns is Reset before its first wait, as cenkalti's Retry
// does.
// Curator's policies are here too: ExponentialBackoffRetry, RetryNTimes,
// RetryOneTime, RetryForever, RetryUntilElapsed.
func WithRetryPolicy(newBackOff func() backoff.BackOff) Option {
	return engineOption(engine.WithRetryPolicy(newBackOff))
}

// WithErrorPolicy chooses which connection states end a hold.
func WithErrorPolicy(p ErrorPolicy) Option {
	return engineOption(engine.WithErrorPolicy(engine.ErrorPolicy(p)))
}

// WithoutContainers makes the recipes create their parent nodes as
// persistent nodes instead of containers, as Curator's
// dontUseContainerParents does: for servers that refuse containers (older
// than 3.5.3). Nothing then removes parents left empty: run a
// cleanup.Reaper.
func WithoutContainers() Option { return engineOption(engine.WithoutContainers()) }

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
