package recipes

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// Option configures a Client. Connect and NewClient validate options and
// return an error wrapping ErrInvalidArgument for a bad one.
type Option func(*options) error

// options is the engine's configuration, which the options fill in.
type options struct{ cfg engine.Config }

// DefaultSessionTimeout is the session timeout requested when
// WithSessionTimeout is not given.
const DefaultSessionTimeout = 15 * time.Second

// DefaultRetryPolicy is an exponential backoff from 10ms to 1s that gives
// up after limit (0 means never).
func DefaultRetryPolicy(limit time.Duration) backoff.BackOff { return engine.DefaultRetryPolicy(limit) }

// config applies opts to the defaults, in order; a nil option or one that
// fails is refused.
func config(opts []Option) (engine.Config, error) {
	o := options{cfg: engine.DefaultConfig()}
	for _, opt := range opts {
		if opt == nil {
			return o.cfg, fmt.Errorf("%w: nil option", ErrInvalidArgument)
		}
		if err := opt(&o); err != nil {
			return o.cfg, err
		}
	}
	return o.cfg, nil
}

// WithSessionTimeout sets the session timeout requested from the server
// (the server clamps it to [2, 20] × its tickTime).
func WithSessionTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Millisecond {
			return fmt.Errorf("%w: session timeout %v (want at least 1ms; the server clamps it to 2-20 ticks)", ErrInvalidArgument, d)
		}
		o.cfg.SessionTimeout = d
		return nil
	}
}

// WithConnectTimeout sets how long Connect and NewClient wait for the first
// session; 0 means do not wait (the Client starts LATENT).
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("%w: connect timeout %v (want 0, do not wait, or more)", ErrInvalidArgument, d)
		}
		o.cfg.ConnectTimeout = d
		return nil
	}
}

// WithDialer sets the function go-zookeeper dials servers with.
func WithDialer(d zk.Dialer) Option {
	return func(o *options) error {
		if d == nil {
			return fmt.Errorf("%w: nil dialer", ErrInvalidArgument)
		}
		o.cfg.Dialer = d
		return nil
	}
}

// WithHostProvider sets go-zookeeper's host provider (server selection).
// A host provider of the user's own turns off following the ensemble's
// reconfiguration (see WithoutEnsembleTracking): the Client cannot
// replace its list.
func WithHostProvider(hp zk.HostProvider) Option {
	return func(o *options) error {
		if hp == nil {
			return fmt.Errorf("%w: nil host provider", ErrInvalidArgument)
		}
		o.cfg.HostProvider = hp
		return nil
	}
}

// WithZKLogger sends go-zookeeper's own log lines to l instead of to the
// client's slog logger at debug level.
func WithZKLogger(l zk.Logger) Option {
	return func(o *options) error { o.cfg.ZKLogger = l; return nil }
}

// WithMaxBufferSize limits the size of a packet go-zookeeper accepts.
func WithMaxBufferSize(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("%w: max buffer size %d (want 0, the default, or more)", ErrInvalidArgument, n)
		}
		o.cfg.MaxBufferSize = n
		return nil
	}
}

// WithLogger sets the structured logger. The default discards everything.
// Errors that happen away from the caller (a background delete that keeps
// failing, a node recreated, a session declared lost) are logged at warn
// or error.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidArgument)
		}
		o.cfg.Logger = l
		return nil
	}
}

// WithNamespace prefixes every recipe path with ns, like Curator's
// namespace: with namespace "app", a lock at "/locks/a" lives at
// "/app/locks/a". ns may be given with or without its leading slash.
func WithNamespace(ns string) Option {
	return func(o *options) error {
		if ns == "" || ns == "/" {
			o.cfg.Namespace = ""
			return nil
		}
		if !strings.HasPrefix(ns, "/") {
			ns = "/" + ns
		}
		if err := zkpath.ValidatePath(ns); err != nil {
			return fmt.Errorf("%w: namespace: %w", ErrInvalidArgument, err)
		}
		o.cfg.Namespace = ns
		return nil
	}
}

// WithACLProvider sets the ACLs of the nodes the recipes and the Client
// create: every node, each missing parent and the namespace node
// included, gets p.ACLFor(its server path) when it is created, as with
// Curator's ACLProvider. Nodes that exist keep their ACLs. See
// docs/security.md for the nodes each recipe creates.
func WithACLProvider(p ACLProvider) Option {
	return func(o *options) error {
		if p == nil {
			return fmt.Errorf("%w: nil ACL provider", ErrInvalidArgument)
		}
		o.cfg.ACL = p.ACLFor
		return nil
	}
}

// WithAuth adds authentication info sent right after connecting, for
// example WithAuth("digest", []byte("user:secret")).
func WithAuth(scheme string, auth []byte) Option {
	return func(o *options) error {
		if scheme == "" {
			return fmt.Errorf("%w: empty auth scheme", ErrInvalidArgument)
		}
		o.cfg.Auth = append(o.cfg.Auth, engine.Auth{Scheme: scheme, Data: append([]byte(nil), auth...)})
		return nil
	}
}

// WithRetryPolicy sets the backoff used to retry requests that failed with
// a transient connection error. newBackOff is called once per operation,
// and what it returns is Reset before its first wait, as cenkalti's Retry
// does.
// Curator's policies are here too: ExponentialBackoffRetry, RetryNTimes,
// RetryOneTime, RetryForever, RetryUntilElapsed.
func WithRetryPolicy(newBackOff func() backoff.BackOff) Option {
	return func(o *options) error {
		if newBackOff == nil {
			return fmt.Errorf("%w: nil retry policy", ErrInvalidArgument)
		}
		o.cfg.Retry = newBackOff
		return nil
	}
}

// WithErrorPolicy chooses which connection states end a hold.
func WithErrorPolicy(p ErrorPolicy) Option {
	return func(o *options) error {
		if p != PolicyStandard && p != PolicySession {
			return fmt.Errorf("%w: error policy %d (want PolicyStandard or PolicySession)", ErrInvalidArgument, p)
		}
		o.cfg.ErrorPolicy = zkstate.ErrorPolicy(p)
		return nil
	}
}

// WithoutContainers makes the recipes create their parent nodes as
// persistent nodes instead of containers, as Curator's
// dontUseContainerParents does: for servers that refuse containers (older
// than 3.5.3). Nothing then removes parents left empty: run a
// cleanup.Reaper.
func WithoutContainers() Option {
	return func(o *options) error { o.cfg.NoContainers = true; return nil }
}

// WithoutEnsembleTracking makes the Client keep to the addresses given to
// Connect. By default, as Curator's EnsembleTracker does, a Client made by
// Connect follows the ensemble's dynamic reconfiguration (ZooKeeper 3.5+
// with reconfigEnabled): it watches /zookeeper/config and, when the
// ensemble's members change, moves its address list to the new members
// (observers included) without losing the session. The connection stays
// on its server while that server is a member; when the server is removed
// the Client reconnects at once, with the same session, to a remaining
// member (SUSPENDED, then RECONNECTED). The addresses given to Connect
// seed the first connection; the members replace them at the first
// reading only when every one of them is a member (not when they name a
// proxy or a load balancer, which are kept until the membership
// changes). With WithTLS the members' TLS client addresses are followed,
// which servers publish from ZooKeeper 3.10 on. NewClient's adopted
// connections and WithHostProvider turn tracking off. See docs/usage.md.
func WithoutEnsembleTracking() Option {
	return func(o *options) error { o.cfg.NoEnsembleTracking = true; return nil }
}

// ACLProvider chooses the ACL list for a node about to be created: Curator's
// ACLProvider.getAclForPath. ACLFor gets the node's server path, namespace
// included, and for a sequential node the path before the server's
// sequence suffix. It is called for each node, parents included. There
// is no default ACL to fall back on (Curator's getDefaultAcl): an empty
// list is refused by the server, and the create fails with an error
// wrapping zk.ErrInvalidACL.
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
