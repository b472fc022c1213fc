package sasl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// OpSASL is ZooKeeper's OpCode.sasl: a request carrying a GetSASLRequest
// {buffer token}, answered by a SetSASLResponse {buffer token}.
const OpSASL = 102

// The server's error codes for a failed SASL authentication: AUTHFAILED,
// and SESSIONCLOSEDREQUIRESASLAUTH when the server requires SASL
// (enforce.auth.enabled with the sasl scheme). Both come with the
// connection closed after the reply.
const (
	CodeAuthFailed                   = -115
	CodeSessionClosedRequireSASLAuth = -124
)

// ErrAuthFailed matches (errors.Is) every failed authentication: the
// server's refusal (*ServerError) and the client's (ErrServerNotVerified
// and a mechanism's other errors, through *Error).
var ErrAuthFailed = errors.New("SASL authentication failed")

// maxReply bounds a SetSASLResponse frame (jute.maxbuffer is about 1 MiB
// by default).
const maxReply = 16 << 20

// Error is a failed exchange: the mechanism, the step (1-based count of
// tokens sent) and the cause.
type Error struct {
	Mechanism string
	Step      int
	Err       error
}

func (e *Error) Error() string {
	return fmt.Sprintf("zookeeper SASL %s authentication failed at step %d: %v", e.Mechanism, e.Step, e.Err)
}

func (e *Error) Unwrap() []error { return []error{ErrAuthFailed, e.Err} }

// ServerError is the server's refusal: the reply's error code.
type ServerError struct{ Code int32 }

func (e *ServerError) Error() string {
	switch e.Code {
	case CodeAuthFailed:
		return "the server refused the credentials (AUTHFAILED, -115)"
	case CodeSessionClosedRequireSASLAuth:
		return "the server requires SASL and refused the credentials (SESSIONCLOSEDREQUIRESASLAUTH, -124)"
	}
	return fmt.Sprintf("the server answered error %d", e.Code)
}

// Exchange runs m's authentication on rw, a connection whose session
// handshake (ConnectResponse) was just read and on which nothing else is
// sent until Exchange returns. xid numbers each request. The caller sets
// the connection's deadlines. On error the connection is unusable: the
// server closes it after refusing, and a client that refused the server
// must close it too.
func Exchange(rw io.ReadWriter, m Mechanism, xid func() int32) error {
	fail := func(step int, err error) error { return &Error{Mechanism: m.Name(), Step: step, Err: err} }
	token, err := m.Start()
	if err != nil {
		return fail(0, err)
	}
	for step := 1; ; step++ {
		x := xid()
		if _, err := rw.Write(AppendRequest(nil, x, token)); err != nil {
			return fail(step, fmt.Errorf("sending: %w", err))
		}
		got, code, reply, err := ReadReply(rw)
		if err != nil {
			return fail(step, fmt.Errorf("reading the reply: %w", err))
		}
		if got != x {
			return fail(step, fmt.Errorf("a reply to xid %d, want %d", got, x))
		}
		if code != 0 {
			return fail(step, &ServerError{Code: code})
		}
		next, done, err := m.Next(reply)
		if err != nil {
			return fail(step, err)
		}
		if done && next == nil {
			return nil
		}
		token = next
	}
}

// AppendRequest appends the frame of a SASL request (length, xid,
// OpSASL, GetSASLRequest{token}) to b.
func AppendRequest(b []byte, xid int32, token []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(4+4+4+len(token)))
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, OpSASL)
	b = binary.BigEndian.AppendUint32(b, uint32(len(token)))
	return append(b, token...)
}

// ReadReply reads one reply frame (length, xid, zxid, err, then a
// SetSASLResponse{token} that a refusal may carry as a null buffer or
// leave out) and returns its xid, error code and token.
func ReadReply(r io.Reader) (xid, code int32, token []byte, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 16 || n > maxReply {
		return 0, 0, nil, fmt.Errorf("a reply frame of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, 0, nil, err
	}
	xid = int32(binary.BigEndian.Uint32(body[0:4]))
	code = int32(binary.BigEndian.Uint32(body[12:16]))
	token, err = DecodeResponse(body[16:])
	if err != nil && code == 0 {
		return 0, 0, nil, err
	}
	return xid, code, token, nil
}

// DecodeResponse decodes a SetSASLResponse record: a jute buffer, whose
// length -1 is a null token.
func DecodeResponse(b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("a SetSASLResponse of %d bytes", len(b))
	}
	n := int32(binary.BigEndian.Uint32(b[:4]))
	if n < 0 {
		return nil, nil
	}
	if int(n) > len(b)-4 {
		return nil, fmt.Errorf("a SetSASLResponse token of %d bytes in %d", n, len(b)-4)
	}
	return b[4 : 4+n], nil
}
