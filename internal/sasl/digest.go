package sasl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ZooKeeper's DIGEST-MD5 parameters: its Java client and server both
// hard-wire the protocol (service) "zookeeper" and the server name
// "zk-sasl-md5", which the server also offers as its realm; the
// digest-uri is therefore "zookeeper/zk-sasl-md5".
const (
	ZooKeeperService = "zookeeper"
	ZooKeeperHost    = "zk-sasl-md5"
)

// ErrServerNotVerified is returned when the server's rspauth does not
// prove that it knows the user's password (a server that is not the one
// configured with it, or a tampered exchange).
var ErrServerNotVerified = errors.New("sasl: DIGEST-MD5: the server's rspauth does not match")

// digestState is where a DigestMD5 exchange is.
type digestState int

const (
	digestNew       digestState = iota // Start not called
	digestChallenge                    // waiting for the server's challenge
	digestRspauth                      // response sent, waiting for rspauth
	digestDone
	digestFailed
)

// DigestMD5 is the DIGEST-MD5 client mechanism of RFC 2831, with qop
// "auth" (authentication only, no integrity or privacy layer), as
// ZooKeeper uses it. It verifies the server's rspauth.
type DigestMD5 struct {
	user, password string
	service, host  string // digest-uri = service "/" host
	authzid        string
	cnonce         func() (string, error)

	state   digestState
	rspauth string // what the server must answer
}

// NewDigestMD5 returns the mechanism for user and password as ZooKeeper's
// client runs it (service "zookeeper", host "zk-sasl-md5"). The session
// is then authenticated as the id sasl:<user>.
func NewDigestMD5(user, password string) *DigestMD5 {
	return NewDigestMD5For(user, password, ZooKeeperService, ZooKeeperHost)
}

// NewDigestMD5For returns the mechanism for another service and host
// (digest-uri service/host), as RFC 2831's examples use.
func NewDigestMD5For(user, password, service, host string) *DigestMD5 {
	return &DigestMD5{user: user, password: password, service: service, host: host, cnonce: randomCnonce}
}

// Name returns "DIGEST-MD5".
func (d *DigestMD5) Name() string { return "DIGEST-MD5" }

// Start returns the empty initial token: DIGEST-MD5 starts with the
// server's challenge.
func (d *DigestMD5) Start() ([]byte, error) {
	if d.state != digestNew {
		return nil, errors.New("sasl: DIGEST-MD5: Start called twice")
	}
	d.state = digestChallenge
	return []byte{}, nil
}

// Next answers the server's challenge (the first call) and then checks
// the server's rspauth (the second), which completes the exchange.
func (d *DigestMD5) Next(challenge []byte) ([]byte, bool, error) {
	switch d.state {
	case digestChallenge:
		resp, err := d.respond(challenge)
		if err != nil {
			d.state = digestFailed
			return nil, false, err
		}
		d.state = digestRspauth
		return resp, false, nil
	case digestRspauth:
		if err := d.verify(challenge); err != nil {
			d.state = digestFailed
			return nil, false, err
		}
		d.state = digestDone
		return nil, true, nil
	case digestDone:
		return nil, true, errors.New("sasl: DIGEST-MD5: a server token after the exchange completed")
	default:
		return nil, false, errors.New("sasl: DIGEST-MD5: Next out of turn")
	}
}

// respond builds the digest-response to a digest-challenge (RFC 2831
// 2.1.1 and 2.1.2).
func (d *DigestMD5) respond(challenge []byte) ([]byte, error) {
	c, err := parseDirectives(string(challenge))
	if err != nil {
		return nil, fmt.Errorf("sasl: DIGEST-MD5: challenge: %w", err)
	}
	nonce := c.one("nonce")
	if nonce == "" {
		return nil, errors.New("sasl: DIGEST-MD5: the challenge has no nonce")
	}
	if alg := c.one("algorithm"); alg != "md5-sess" {
		return nil, fmt.Errorf("sasl: DIGEST-MD5: algorithm %q, want md5-sess", alg)
	}
	if qops := c.list("qop"); len(qops) > 0 && !slices.Contains(qops, "auth") {
		return nil, fmt.Errorf("sasl: DIGEST-MD5: the server offers qop %v, not auth", qops)
	}
	realm := d.host // a server that names no realm: the host, as Java's client does
	if rs := c.all("realm"); len(rs) > 0 {
		realm = rs[0]
	}
	utf8 := strings.EqualFold(c.one("charset"), "utf-8")
	cnonce, err := d.cnonce()
	if err != nil {
		return nil, fmt.Errorf("sasl: DIGEST-MD5: cnonce: %w", err)
	}
	p := digestParams{
		user: d.user, realm: realm, password: d.password, nonce: nonce, cnonce: cnonce,
		nc: "00000001", qop: "auth", uri: d.service + "/" + d.host, authzid: d.authzid, utf8: utf8,
	}
	d.rspauth = p.value("")
	var b strings.Builder
	if utf8 {
		b.WriteString("charset=utf-8,")
	}
	fmt.Fprintf(&b, "username=%s,realm=%s,nonce=%s,nc=%s,cnonce=%s,digest-uri=%s,maxbuf=65536,response=%s,qop=auth",
		quote(d.user), quote(realm), quote(nonce), p.nc, quote(cnonce), quote(p.uri), p.value("AUTHENTICATE"))
	if d.authzid != "" {
		fmt.Fprintf(&b, ",authzid=%s", quote(d.authzid))
	}
	return []byte(b.String()), nil
}

// verify checks the server's response-auth (RFC 2831 2.1.3).
func (d *DigestMD5) verify(token []byte) error {
	c, err := parseDirectives(string(token))
	if err != nil {
		return fmt.Errorf("sasl: DIGEST-MD5: response-auth: %w", err)
	}
	got := c.one("rspauth")
	if got == "" {
		return errors.New("sasl: DIGEST-MD5: the server's last token has no rspauth")
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(d.rspauth)) != 1 {
		return ErrServerNotVerified
	}
	return nil
}

// digestParams are the inputs of RFC 2831's response-value.
type digestParams struct {
	user, realm, password string
	nonce, cnonce, nc     string
	qop, uri, authzid     string
	utf8                  bool
}

// value is RFC 2831's response-value for method (AUTHENTICATE for the
// client's response, empty for the server's rspauth), algorithm
// md5-sess, qop auth.
func (p digestParams) value(method string) string {
	ss := md5.Sum([]byte(p.enc(p.user) + ":" + p.enc(p.realm) + ":" + p.enc(p.password)))
	a1 := string(ss[:]) + ":" + p.nonce + ":" + p.cnonce
	if p.authzid != "" {
		a1 += ":" + p.authzid
	}
	a2 := method + ":" + p.uri
	return hexMD5(hexMD5(a1) + ":" + p.nonce + ":" + p.nc + ":" + p.cnonce + ":" + p.qop + ":" + hexMD5(a2))
}

// enc encodes s as RFC 2831 says for the user, realm and password: in
// ISO 8859-1 when the server did not say charset=utf-8 and every
// character fits, else in UTF-8.
func (p digestParams) enc(s string) string {
	if p.utf8 {
		return s
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return s
		}
		b = append(b, byte(r))
	}
	return string(b)
}

func hexMD5(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// randomCnonce returns 16 random bytes in base64, as Java's client
// makes its cnonce (any string of printable characters without quotes
// would do).
func randomCnonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawStdEncoding.EncodeToString(b[:]), nil
}
