package engine

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/internal/sasl"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// Config is a Client's configuration. Package recipes builds it from its
// options, which check every value; DefaultConfig holds the defaults.
type Config struct {
	SessionTimeout time.Duration   // requested from the server, which clamps it to [2, 20] ticks
	ConnectTimeout time.Duration   // how long Connect and NewClient wait for the first session; 0: do not wait
	Dialer         zk.Dialer       // nil: go-zookeeper's
	HostProvider   zk.HostProvider // nil: go-zookeeper's
	ZKLogger       zk.Logger       // nil: go-zookeeper's lines go to Logger at debug level
	MaxBufferSize  int             // 0: go-zookeeper's
	Logger         *slog.Logger    // never nil
	Namespace      string          // "" or a valid path, prefixed to every recipe path
	// ACL gives the ACL list of a node about to be created.
	ACL func(path string) []zk.ACL
	// Auth is sent after every connection, in order.
	Auth []Auth
	// Retry makes the backoff of one operation's retries; nil:
	// DefaultRetryPolicy(2 × SessionTimeout).
	Retry       func() backoff.BackOff
	ErrorPolicy zkstate.ErrorPolicy
	// wire is, for NewClient, the Wire the adopted connection was dialled
	// through (the engine's tests set it); Connect always dials through a
	// Wire of its own.
	wire         *wire
	NoContainers bool        // parents are persistent nodes, not containers
	Metrics      metric.Sink // nil: no metrics
	// SASL makes the mechanism of one connection's SASL exchange (a new
	// one per connection) with the server dialled at address; nil: no
	// SASL.
	SASL func(address string) sasl.Mechanism
	// MetricsPath bounds the recipe metrics' path label; nil: the path.
	MetricsPath func(recipe, path string) string

	// TLS, when not nil, makes every connection (the Wire's requests
	// included) a TLS connection: dialled through Dialer, then handshaken
	// with this configuration within the dial timeout. The server name
	// checked is the host of the address dialled unless it sets ServerName.
	TLS *tls.Config

	// NoEnsembleTracking: Connect does not follow the ensemble's
	// reconfigurations (/zookeeper/config, ensemble.go); without it, and
	// without a HostProvider, the Client's own host provider does.
	NoEnsembleTracking bool
}

// Auth is one set of credentials sent after connecting.
type Auth struct {
	Scheme string
	Data   []byte
}

// DefaultConfig is the configuration of a Client given no options:
// Curator's defaults where it has them (a 15 s session, world:anyone
// ACLs).
func DefaultConfig() Config {
	return Config{
		SessionTimeout: 15 * time.Second,
		ConnectTimeout: 15 * time.Second,
		Logger:         discardLogger,
		ACL:            func(string) []zk.ACL { return zk.WorldACL(zk.PermAll) },
	}
}

// completed fills what Config leaves to the engine: the retry policy,
// which depends on the session timeout, and a logger and ACL for a
// Config not made from DefaultConfig.
func (cfg Config) completed() Config {
	if cfg.Retry == nil {
		limit := 2 * cfg.SessionTimeout
		cfg.Retry = func() backoff.BackOff { return DefaultRetryPolicy(limit) }
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger
	}
	if cfg.ACL == nil {
		cfg.ACL = DefaultConfig().ACL
	}
	return cfg
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
