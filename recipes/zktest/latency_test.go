package zktest

import (
	"io"
	"net"
	"testing"
	"time"
)

// SetLatency delays each direction: a round trip through the proxy takes
// twice the latency, bytes keep their order, and a black-hole loses the
// bytes still on their way.
func TestProxyLatency(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // an echo server
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	p := NewProxy(t, ln.Addr().String())
	const d = 100 * time.Millisecond
	p.SetLatency(d)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	for i := byte(0); i < 3; i++ { // three chunks in a row: one round trip
		if _, err := c.Write([]byte{'a' + i}); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, 3)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	rtt := time.Since(start)
	if string(got) != "abc" {
		t.Fatalf("echo %q, want abc", got)
	}
	if rtt < 2*d || rtt > 2*d+500*time.Millisecond {
		t.Fatalf("round trip %v with %v each way", rtt, d)
	}
	t.Logf("round trip %v with %v each way", rtt, d)

	// Sent, then black-holed while on its way: never arrives.
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d / 2)
	p.Blackhole()
	_ = c.SetReadDeadline(time.Now().Add(3 * d))
	if n, err := c.Read(got); n > 0 || err == nil {
		t.Fatalf("read %q through a black-hole", got[:n])
	}
}
