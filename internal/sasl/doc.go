// Package sasl holds the client side of ZooKeeper's SASL authentication:
// the mechanisms (DIGEST-MD5 here, as ZooKeeper's Java client runs it
// against a server whose JAAS Server section uses DigestLoginModule;
// GSSAPI, Kerberos, in the subpackage gssapi) and
// the exchange of GetSASLRequest/SetSASLResponse frames (OpCode.sasl, 102)
// that runs on a connection right after the session handshake and before
// any other request.
//
// The package knows nothing of go-zookeeper or of the engine: the engine's
// Wire wraps each new connection in a Conn, which runs Exchange (see
// docs/security.md).
package sasl

// Mechanism is one SASL client mechanism, used for one authentication
// (one connection): a new connection needs a new Mechanism.
type Mechanism interface {
	// Name is the mechanism's SASL name, e.g. "DIGEST-MD5".
	Name() string
	// Start returns the token the client sends first; it may be empty
	// (DIGEST-MD5 has no initial response: ZooKeeper's client then sends
	// an empty token and the server answers with its challenge).
	Start() ([]byte, error)
	// Next evaluates the server's token. It returns the next token to
	// send, or done when the authentication is complete on the client's
	// side (a nil token then means nothing more is sent). An error means
	// the authentication failed (for example the server could not prove
	// it knows the password).
	Next(challenge []byte) (response []byte, done bool, err error)
}
