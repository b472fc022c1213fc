package sasl

import (
	"errors"
	"strings"
	"testing"
)

func fixedCnonce(s string) func() (string, error) { return func() (string, error) { return s, nil } }

// RFC 2831 section 4's example: chris/secret logging in to IMAP.
func TestDigestRFC2831Example(t *testing.T) {
	d := NewDigestMD5For("chris", "secret", "imap", "elwood.innosoft.com")
	d.cnonce = fixedCnonce("OA6MHXh6VqTrRk")
	if tok, err := d.Start(); err != nil || len(tok) != 0 {
		t.Fatalf("Start = %q, %v; want an empty token", tok, err)
	}
	resp, done, err := d.Next([]byte(`realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8`))
	if err != nil || done {
		t.Fatalf("Next(challenge) = %v, %v", done, err)
	}
	got, err := parseDirectives(string(resp))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"charset": "utf-8", "username": "chris", "realm": "elwood.innosoft.com", "nonce": "OA6MG9tEQGm2hh",
		"nc": "00000001", "cnonce": "OA6MHXh6VqTrRk", "digest-uri": "imap/elwood.innosoft.com",
		"response": "d388dad90d4bbd760a152321f2143af7", "qop": "auth",
	}
	for k, v := range want {
		if got.one(k) != v {
			t.Errorf("response %s = %q, want %q (response %s)", k, got.one(k), v, resp)
		}
	}
	next, done, err := d.Next([]byte("rspauth=ea40f60335c427b5527b84dbabcdfffd"))
	if err != nil || !done || next != nil {
		t.Fatalf("Next(rspauth) = %q, %v, %v; want nil, true, nil", next, done, err)
	}
}

// The ZooKeeper parameters, with values derived by hand (Python's
// hashlib over RFC 2831's formulas, md5-sess, qop auth):
// bob/s3cret, nonce "nonce-from-server", cnonce "fixedcnonce".
const (
	zkChallenge = `realm="zk-sasl-md5",nonce="nonce-from-server",qop="auth",charset=utf-8,algorithm=md5-sess`
	zkResponse  = "ba13f8842faba1e1fe08bd3096ee882a"
	zkRspauth   = "6d32ac657dd18359599fb4bd45a68d00"
)

func zkDigest(t *testing.T, password string) (*DigestMD5, directives) {
	t.Helper()
	d := NewDigestMD5("bob", password)
	d.cnonce = fixedCnonce("fixedcnonce")
	if _, err := d.Start(); err != nil {
		t.Fatal(err)
	}
	resp, _, err := d.Next([]byte(zkChallenge))
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseDirectives(string(resp))
	if err != nil {
		t.Fatal(err)
	}
	return d, got
}

func TestDigestZooKeeper(t *testing.T) {
	d, got := zkDigest(t, "s3cret")
	if u := got.one("digest-uri"); u != "zookeeper/zk-sasl-md5" {
		t.Errorf("digest-uri %q", u)
	}
	if r := got.one("response"); r != zkResponse {
		t.Errorf("response %q, want %q", r, zkResponse)
	}
	if _, done, err := d.Next([]byte("rspauth=" + zkRspauth)); err != nil || !done {
		t.Fatalf("rspauth: %v %v", done, err)
	}
}

func TestDigestBadRspauth(t *testing.T) {
	d, _ := zkDigest(t, "s3cret")
	_, done, err := d.Next([]byte("rspauth=" + strings.Repeat("0", 32)))
	if !errors.Is(err, ErrServerNotVerified) || done {
		t.Fatalf("a wrong rspauth: %v, %v; want ErrServerNotVerified", done, err)
	}
	if _, _, err := d.Next([]byte("rspauth=" + zkRspauth)); err == nil {
		t.Fatal("Next after a failure succeeded")
	}
}

func TestDigestWrongPasswordDiffers(t *testing.T) {
	d, got := zkDigest(t, "wrong")
	if got.one("response") == zkResponse {
		t.Fatal("a wrong password gave the right response")
	}
	if _, _, err := d.Next([]byte("rspauth=" + zkRspauth)); !errors.Is(err, ErrServerNotVerified) {
		t.Fatalf("%v", err)
	}
}

func TestDigestRejectsChallenges(t *testing.T) {
	for _, c := range []string{
		`realm="r",qop="auth",algorithm=md5-sess`,      // no nonce
		`nonce="n",qop="auth-conf",algorithm=md5-sess`, // no auth qop
		`nonce="n",qop="auth",algorithm=md5`,           // not md5-sess
		`nonce="n,qop="auth",algorithm=md5-sess`,       // unterminated quote
		`nonce="n" x,algorithm=md5-sess`,               // junk after a value
		`=x`,                                           // no name
	} {
		d := NewDigestMD5("bob", "pw")
		_, _ = d.Start()
		if _, _, err := d.Next([]byte(c)); err == nil {
			t.Errorf("challenge %s accepted", c)
		}
	}
}

func TestDirectives(t *testing.T) {
	d, err := parseDirectives(` realm="a",realm="b\"c", qop="auth, auth-int" ,nonce=tok , `)
	if err != nil {
		t.Fatal(err)
	}
	if r := d.all("realm"); len(r) != 2 || r[1] != `b"c` {
		t.Errorf("realms %q", r)
	}
	if q := d.list("qop"); len(q) != 2 || q[1] != "auth-int" {
		t.Errorf("qop %q", q)
	}
	if d.one("nonce") != "tok" {
		t.Errorf("nonce %q", d.one("nonce"))
	}
	if q := quote(`a"b\c`); q != `"a\"b\\c"` {
		t.Errorf("quote %s", q)
	}
}

// ISO 8859-1 user names hash as Latin-1 bytes when the server did not
// offer utf-8, and as UTF-8 when it did.
func TestDigestCharset(t *testing.T) {
	latin := digestParams{user: "jös", utf8: false}
	if latin.enc("jös") != "j\xf6s" {
		t.Errorf("latin-1 %q", latin.enc("jös"))
	}
	utf := digestParams{utf8: true}
	if utf.enc("jös") != "jös" {
		t.Errorf("utf-8 %q", utf.enc("jös"))
	}
	if latin.enc("j€") != "j€" {
		t.Errorf("a non-Latin-1 name must stay UTF-8")
	}
}
