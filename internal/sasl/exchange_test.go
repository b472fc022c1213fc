package sasl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestAppendRequest(t *testing.T) {
	got := AppendRequest(nil, 7, []byte("ab"))
	want := []byte{0, 0, 0, 14, 0, 0, 0, 7, 0, 0, 0, 102, 0, 0, 0, 2, 'a', 'b'}
	if !bytes.Equal(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}

func reply(xid int32, code int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(16+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint64(b, 0x42)
	b = binary.BigEndian.AppendUint32(b, uint32(code))
	return append(b, body...)
}

func TestReadReply(t *testing.T) {
	ok := reply(3, 0, []byte{0, 0, 0, 3, 'x', 'y', 'z'})
	null := reply(4, CodeAuthFailed, []byte{0xff, 0xff, 0xff, 0xff}) // SetSASLResponse(null)
	bare := reply(5, CodeSessionClosedRequireSASLAuth, nil)          // no record at all
	r := bytes.NewReader(append(append(ok, null...), bare...))
	for _, w := range []struct {
		xid, code int32
		tok       string
	}{{3, 0, "xyz"}, {4, CodeAuthFailed, ""}, {5, CodeSessionClosedRequireSASLAuth, ""}} {
		xid, code, tok, err := ReadReply(r)
		if err != nil || xid != w.xid || code != w.code || string(tok) != w.tok {
			t.Errorf("ReadReply = %d %d %q %v, want %d %d %q", xid, code, tok, err, w.xid, w.code, w.tok)
		}
	}
	if _, _, _, err := ReadReply(bytes.NewReader(reply(6, 0, []byte{0, 0, 0, 9, 'a'}))); err == nil {
		t.Error("a token longer than its frame was read")
	}
	if _, _, _, err := ReadReply(bytes.NewReader([]byte{0, 0, 0, 3, 1, 2, 3})); err == nil {
		t.Error("a frame shorter than a reply header was read")
	}
}

func TestErrors(t *testing.T) {
	err := error(&Error{Mechanism: "DIGEST-MD5", Step: 2, Err: &ServerError{Code: CodeAuthFailed}})
	var se *ServerError
	if !errors.Is(err, ErrAuthFailed) || !errors.As(err, &se) || se.Code != CodeAuthFailed {
		t.Fatalf("%v does not match ErrAuthFailed and *ServerError", err)
	}
	if !errors.Is(&Error{Err: ErrServerNotVerified}, ErrServerNotVerified) {
		t.Fatal("ErrServerNotVerified lost")
	}
	t.Log(err)
}
