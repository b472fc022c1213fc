package recipes

import (
	"fmt"
	"net"

	"github.com/zkrecipes/zkrecipes/internal/sasl"
)

// SASLMechanism is the client side of one SASL authentication, for one
// connection (as Java's SaslClient): WithSASL makes a new one for each
// connection the Client dials. Start gives the first token (it may be
// empty); Next evaluates each token of the server's and gives the next
// one to send, or done when the client's side is complete (a nil token
// then sends nothing more); an error fails the authentication.
type SASLMechanism interface {
	Name() string
	Start() ([]byte, error)
	Next(challenge []byte) (response []byte, done bool, err error)
}

// WithSASL authenticates every connection with SASL, right after each
// session handshake and before any request, as ZooKeeper's Java client
// does: the session is authenticated anew on each connection (the server
// keeps authentication per connection). mechanism makes one
// authentication's mechanism for the server at host (the host of the
// address dialled). When a server refuses it, Connect fails at once with
// an error wrapping ErrAuthFailed (no session is left without its
// rights); after the first session a refusal is a lost connection.
// WithSASLDigest and package recipes/kerberos make mechanisms; see
// docs/security.md.
func WithSASL(mechanism func(host string) SASLMechanism) Option {
	return func(o *options) error {
		if mechanism == nil {
			return fmt.Errorf("%w: nil SASL mechanism", ErrInvalidArgument)
		}
		o.cfg.SASL = func(address string) sasl.Mechanism {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				host = address
			}
			if m := mechanism(host); m != nil {
				return m
			}
			return noMechanism{}
		}
		return nil
	}
}

// WithSASLDigest is WithSASL with DIGEST-MD5 as user, a JAAS
// DigestLoginModule user of the servers; the session's ACL identity is
// sasl:<user>. ZooKeeper 3.9 refuses DIGEST-MD5 unless its FIPS mode is
// off (-Dzookeeper.fips-mode=false on the servers).
func WithSASLDigest(user, password string) Option {
	if user == "" {
		return func(*options) error { return fmt.Errorf("%w: empty SASL user", ErrInvalidArgument) }
	}
	return WithSASL(func(string) SASLMechanism { return sasl.NewDigestMD5(user, password) })
}

// noMechanism fails an authentication whose mechanism func gave none.
type noMechanism struct{}

func (noMechanism) Name() string { return "none" }
func (noMechanism) Start() ([]byte, error) {
	return nil, fmt.Errorf("%w: the WithSASL mechanism func returned nil", ErrInvalidArgument)
}
func (noMechanism) Next([]byte) ([]byte, bool, error) { return nil, true, nil }
