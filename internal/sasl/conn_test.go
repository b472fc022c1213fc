package sasl

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// A ConnectResponse that grants no session (the session expired) is
// handed over as it came, with no exchange: there is nothing to
// authenticate on that connection.
func TestConnNoSessionPassesThrough(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	resp := binary.BigEndian.AppendUint32(nil, 4+4+8+4+16)
	resp = append(resp, make([]byte, 4+4+8)...) // version, timeout, session 0
	resp = binary.BigEndian.AppendUint32(resp, 16)
	resp = append(resp, bytes.Repeat([]byte{7}, 16)...)
	go func() { _, _ = server.Write(append(resp, 'x')) }()
	told := false
	c := NewConn(client, NewDigestMD5("u", "p"), time.Second, func(error) { told = true })
	got := make([]byte, len(resp)+1)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append(resp, 'x')) || told {
		t.Fatalf("got %v (told %v), want the response and the next byte untouched", got, told)
	}
}

// A ConnectResponse frame too short or too long is an error, not a hang.
func TestConnBadConnectResponse(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	go func() { _, _ = server.Write([]byte{0, 0, 0, 3}) }()
	if _, err := NewConn(client, NewDigestMD5("u", "p"), time.Second, nil).Read(make([]byte, 8)); err == nil {
		t.Fatal("a 3-byte ConnectResponse was accepted")
	}
}
