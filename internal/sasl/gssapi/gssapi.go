// Package gssapi is the SASL GSSAPI mechanism (RFC 4752) with Kerberos
// 5 (RFC 4121), over the pure-Go github.com/jcmturner/gokrb5/v8, as
// ZooKeeper's Java client runs it against a server whose JAAS Server
// section uses Krb5LoginModule: mutual authentication, no security layer.
// It is a package of its own so that DIGEST-MD5 users do not link
// gokrb5.
package gssapi

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/crypto"
	gss "github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"
)

// ErrServerNotVerified is returned when the server's AP-REP does not
// prove that it holds the service key (mutual authentication failed).
var ErrServerNotVerified = errors.New("sasl: GSSAPI: the server's AP-REP does not answer our authenticator")

// layerNone is RFC 4752's "no security layer" bit.
const layerNone = 1

// Mechanism is SASL GSSAPI for one connection.
type Mechanism struct {
	cl      *client.Client
	spn     string // service/host
	authzid string

	step  int
	key   types.EncryptionKey
	ctime types.Authenticator // ours, to check the AP-REP against
}

// New returns the mechanism for a logged-in gokrb5 client and the
// server's principal service/host (ZooKeeper: "zookeeper" and the
// server's host name, the principal zookeeper/<host>@REALM). The
// authorization id is the client's principal, user@REALM, as the Java
// client sends it; the session's ACL id is then sasl:user@REALM (the
// server drops the realm when it runs with
// zookeeper.kerberos.removeRealmFromPrincipal=true).
func New(cl *client.Client, service, host string) *Mechanism {
	c := cl.Credentials
	return &Mechanism{cl: cl, spn: service + "/" + host, authzid: c.CName().PrincipalNameString() + "@" + c.Domain()}
}

// Name returns "GSSAPI".
func (m *Mechanism) Name() string { return "GSSAPI" }

// Start gets a service ticket (from the client's cache or the KDC) and
// returns the GSS-API initial context token: an AP-REQ asking for mutual
// authentication.
func (m *Mechanism) Start() ([]byte, error) {
	if m.step != 0 {
		return nil, errors.New("sasl: GSSAPI: Start called twice")
	}
	m.step = 1
	tkt, key, err := m.cl.GetServiceTicket(m.spn)
	if err != nil {
		return nil, fmt.Errorf("sasl: GSSAPI: a service ticket for %s: %w", m.spn, err)
	}
	m.key = key
	tok, err := spnego.NewKRB5TokenAPREQ(m.cl, tkt, key,
		[]int{gss.ContextFlagMutual, gss.ContextFlagInteg, gss.ContextFlagConf},
		[]int{flags.APOptionMutualRequired})
	if err != nil {
		return nil, fmt.Errorf("sasl: GSSAPI: AP-REQ: %w", err)
	}
	if err := tok.APReq.DecryptAuthenticator(key); err != nil {
		return nil, fmt.Errorf("sasl: GSSAPI: AP-REQ: %w", err)
	}
	m.ctime = tok.APReq.Authenticator
	return tok.Marshal()
}

// Next checks the server's AP-REP (answering with an empty token), then
// answers the server's wrapped security-layer offer with "no layer" and
// the authorization id, and completes on the server's last (empty)
// token.
func (m *Mechanism) Next(challenge []byte) ([]byte, bool, error) {
	m.step++
	switch m.step {
	case 2:
		if err := m.checkAPRep(challenge); err != nil {
			return nil, false, err
		}
		return []byte{}, false, nil
	case 3:
		out, err := m.layers(challenge)
		return out, false, err
	case 4:
		if len(challenge) != 0 {
			return nil, false, fmt.Errorf("sasl: GSSAPI: %d bytes after the last step", len(challenge))
		}
		return nil, true, nil
	}
	return nil, false, errors.New("sasl: GSSAPI: Next out of turn")
}

// checkAPRep verifies the server's AP-REP: its encrypted part, under the
// session key, must carry our authenticator's time (RFC 4120 3.2.5).
func (m *Mechanism) checkAPRep(token []byte) error {
	var t spnego.KRB5Token
	if err := t.Unmarshal(token); err != nil {
		return fmt.Errorf("sasl: GSSAPI: the server's reply: %w", err)
	}
	if t.IsKRBError() {
		return fmt.Errorf("sasl: GSSAPI: the server refused the ticket: %s", t.KRBError.Error())
	}
	if !t.IsAPRep() {
		return errors.New("sasl: GSSAPI: the server's reply is no AP-REP")
	}
	b, err := crypto.DecryptEncPart(t.APRep.EncPart, m.key, keyusage.AP_REP_ENCPART)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrServerNotVerified, err)
	}
	var enc messages.EncAPRepPart
	if err := enc.Unmarshal(b); err != nil {
		return fmt.Errorf("%w: %v", ErrServerNotVerified, err)
	}
	if !enc.CTime.Equal(m.ctime.CTime) || enc.Cusec != m.ctime.Cusec {
		return ErrServerNotVerified
	}
	if enc.Subkey.KeyType != 0 { // RFC 4121: the acceptor's subkey protects what follows
		m.key = enc.Subkey
	}
	return nil
}

// layers reads the server's wrapped offer (RFC 4752 3.1: a bit mask of
// layers and a maximum size) and returns our wrapped choice: no layer,
// size 0, the authorization id.
func (m *Mechanism) layers(token []byte) ([]byte, error) {
	var w gss.WrapToken
	if err := w.Unmarshal(token, true); err != nil {
		return nil, fmt.Errorf("sasl: GSSAPI: the server's offer: %w", err)
	}
	if ok, err := w.Verify(m.key, keyusage.GSSAPI_ACCEPTOR_SEAL); !ok {
		return nil, fmt.Errorf("%w: the offer's checksum: %v", ErrServerNotVerified, err)
	}
	if len(w.Payload) != 4 || w.Payload[0]&layerNone == 0 {
		return nil, fmt.Errorf("sasl: GSSAPI: the server offers layers %x, not \"none\"", w.Payload)
	}
	out, err := gss.NewInitiatorWrapToken(append([]byte{layerNone, 0, 0, 0}, m.authzid...), m.key)
	if err != nil {
		return nil, fmt.Errorf("sasl: GSSAPI: wrapping our choice: %w", err)
	}
	b, err := out.Marshal()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}
