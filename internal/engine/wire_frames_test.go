package engine

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// frame builds a ZooKeeper frame: a length prefix, then the int32 fields,
// then pad bytes of body.
func frame(pad int, fields ...int32) []byte {
	body := make([]byte, 0, 4*len(fields)+pad)
	for _, f := range fields {
		body = binary.BigEndian.AppendUint32(body, uint32(f))
	}
	body = append(body, make([]byte, pad)...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// connectResponse is a ConnectResponse frame granting session sid with a
// timeout of ms milliseconds (protocolVersion, timeOut, sessionId, passwd).
func connectResponse(ms int32, sid int64) []byte {
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint32(body, uint32(ms))
	body = binary.BigEndian.AppendUint64(body, uint64(sid))
	body = binary.BigEndian.AppendUint32(body, 16)
	body = append(body, make([]byte, 16)...)
	body = append(body, 0) // readOnly
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// reply is a reply header frame: xid, zxid (int64), err, then pad bytes.
func reply(xid int32, pad int) []byte {
	return frame(pad, xid, 0, 7, 0) // zxid high and low words, err
}

// chunks splits b into pieces: every byte alone, all at once, and random
// cuts.
func chunkings(b []byte, rng *rand.Rand) [][][]byte {
	var single [][]byte
	for i := range b {
		single = append(single, b[i:i+1])
	}
	out := [][][]byte{single, {b}}
	for r := 0; r < 20; r++ {
		var cs [][]byte
		for rest := b; len(rest) > 0; {
			k := 1 + rng.IntN(min(len(rest), 40))
			cs = append(cs, rest[:k])
			rest = rest[k:]
		}
		out = append(out, cs)
	}
	return out
}

func TestFrameParserSplitAndCoalesced(t *testing.T) {
	// A ConnectRequest (45 bytes of body), then requests: xid 1 (getData,
	// 30 bytes more), a ping (xid -2), xid 2 with a long body, an empty
	// frame, xid 3.
	var stream []byte
	stream = append(stream, frame(41, 0)...) // ConnectRequest: skipped whole
	stream = append(stream, frame(30, 1, 4)...)
	stream = append(stream, frame(0, -2, 11)...)
	stream = append(stream, frame(5000, 2, 1)...)
	stream = append(stream, frame(0)...)
	stream = append(stream, frame(3, 3, 5)...)
	wantXids := []int32{1, -2, 2, 3}

	rng := rand.New(rand.NewPCG(1, 2))
	for ci, chunks := range chunkings(stream, rng) {
		var f frameParser
		f.init(4, reqHeaderLen)
		var got []int32
		var first int
		for _, c := range chunks {
			for p := c; ; {
				hdr, index, rest, ok := f.next(p)
				if !ok {
					break
				}
				p = rest
				switch {
				case index == 0:
					first++
				case len(hdr) >= reqHeaderLen:
					got = append(got, int32(binary.BigEndian.Uint32(hdr[4:8])))
				}
			}
		}
		if first != 1 || len(got) != len(wantXids) {
			t.Fatalf("chunking %d (%d pieces): connect frames %d, xids %v; want 1 and %v", ci, len(chunks), first, got, wantXids)
		}
		for i := range got {
			if got[i] != wantXids[i] {
				t.Fatalf("chunking %d: xids %v, want %v", ci, got, wantXids)
			}
		}
	}
}

// The send time of the request a reply answers is what advances
// LastAnswered: not watch events, not replies to requests never seen, and
// never backwards.
func TestWireAnsweredSendTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	in := connectResponse(4000, 0x1234)
	in = append(in, reply(1, 20)...)  // answers xid 1 (sent at 200)
	in = append(in, reply(-1, 60)...) // a watch event: no request
	in = append(in, reply(-2, 0)...)  // the ping sent at 300
	in = append(in, reply(9, 0)...)   // never sent: ignored
	for ci, chunks := range chunkings(in, rng) {
		w := &Wire{}
		c := &wireConn{w: w}
		c.out.init(4, reqHeaderLen)
		c.in.init(handshakeLen, replyHeaderLen)
		c.sent(frame(41, 0), 100) // ConnectRequest
		c.sent(append(frame(8, 1, 4), frame(0, -2, 11)...)[:10], 200)
		c.sent(append(frame(8, 1, 4), frame(0, -2, 11)...)[10:], 300) // the ping's bytes go out at 300
		c.sent(frame(0, 5, 4), 400)                                   // never answered
		var steps []int64
		for _, p := range chunks {
			c.received(p)
			steps = append(steps, w.lastAcked.Load())
		}
		if got := w.SessionTimeout().Milliseconds(); got != 4000 {
			t.Fatalf("chunking %d: session timeout %dms", ci, got)
		}
		if got := w.lastAcked.Load(); got != 300 {
			t.Fatalf("chunking %d: last answered send time %d, want 300 (the ping)", ci, got)
		}
		for i := 1; i < len(steps); i++ {
			if steps[i] < steps[i-1] {
				t.Fatalf("chunking %d: went backwards: %v", ci, steps)
			}
			if steps[i] != 100 && steps[i] != 200 && steps[i] != 300 && steps[i] != 0 {
				t.Fatalf("chunking %d: odd value %v", ci, steps)
			}
		}
		if c.pend.n != 1 || c.pend.xid[c.pend.head] != 5 {
			t.Fatalf("chunking %d: pending %d, want only xid 5", ci, c.pend.n)
		}
	}
}

// Replies before the handshake granted a session count for nothing, and a
// refused handshake (session id 0) grants none.
func TestWireRefusedHandshake(t *testing.T) {
	w := &Wire{}
	c := &wireConn{w: w}
	c.out.init(4, reqHeaderLen)
	c.in.init(handshakeLen, replyHeaderLen)
	c.sent(frame(41, 0), 100)
	c.sent(frame(0, 1, 4), 200)
	c.received(append(connectResponse(0, 0), reply(1, 0)...))
	if _, ok := w.LastAnswered(); ok || w.Handshakes() != 0 {
		t.Fatalf("refused session: LastAnswered set or handshake counted")
	}
}

// The ring forgets the oldest requests past pendingMax.
func TestPendingOverflow(t *testing.T) {
	var r pending
	for x := int32(1); x <= pendingMax+10; x++ {
		r.push(x, int64(x)*10)
	}
	if got := r.answer(5); got != 0 {
		t.Fatalf("xid 5 should be forgotten, got %d", got)
	}
	if got := r.answer(20); got != 200 {
		t.Fatalf("xid 20: %d", got)
	}
	if r.n != pendingMax+10-20 {
		t.Fatalf("left %d", r.n)
	}
}

// The hot path allocates nothing.
func TestWireFramesDoNotAllocate(t *testing.T) {
	w := &Wire{}
	c := &wireConn{w: w}
	c.out.init(4, reqHeaderLen)
	c.in.init(handshakeLen, replyHeaderLen)
	c.sent(frame(41, 0), 1)
	c.received(connectResponse(4000, 1))
	req, rep := frame(20, 7, 4), reply(7, 20)
	allocs := testing.AllocsPerRun(1000, func() {
		c.sent(req, 5)
		c.received(rep[:5])
		c.received(rep[5:])
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request and reply", allocs)
	}
	if c.pend.n != 0 {
		t.Fatalf("pending %d", c.pend.n)
	}
}
