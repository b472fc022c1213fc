package engine

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/go-zookeeper/zk"
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
				h, rest, ok := f.next(p)
				if !ok {
					break
				}
				p = rest
				switch {
				case !h.done:
				case h.index == 0:
					first++
				case len(h.hdr) >= 8:
					got = append(got, int32(binary.BigEndian.Uint32(h.hdr[4:8])))
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
		w := &wire{}
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
	w := &wire{}
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
	w := &wire{}
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

// zxidFrame is a frame of int32 fields, then an int64 at the end, then pad
// bytes.
func zxidFrame(pad int, zxid int64, fields ...int32) []byte {
	f := frame(0, fields...)
	f = binary.BigEndian.AppendUint64(f, uint64(zxid))
	f = append(f, make([]byte, pad)...)
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	return f
}

// replyZxid is a reply frame: xid, zxid, err 0, then pad bytes.
func replyZxid(xid int32, zxid int64, pad int) []byte { return zxidFrame(4+pad, zxid, xid) }

// The Wire keeps go-zookeeper's zxid bookkeeping (go-zookeeper v1.0.4
// races on its own): replies to requests reach go-zookeeper with zxid 0,
// pings and watch events untouched; the ConnectRequest carries the last
// zxid a reply had, and each setWatches the zxid its connection began
// with, however the frames are cut; the caller's buffer is never changed;
// a refused session (expired) starts again from 0.
func TestWireKeepsTheZxid(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	// go-zookeeper's frames: a ConnectRequest (protocolVersion, then its
	// lastZxidSeen, always 0 here, then the rest), a getData, a setWatches
	// (xid, type 101, relativeZxid 0, lists), a ping.
	connectReq := zxidFrame(30, 0, 0)
	getData := frame(12, 1, 4)
	setWatches := zxidFrame(40, 0, 2, 101)
	ping := frame(0, -2, 11)
	want := func(b []byte, at int, zxid int64) []byte {
		b = append([]byte(nil), b...)
		binary.BigEndian.PutUint64(b[at:], uint64(zxid))
		return b
	}
	send := func(c *wireConn, chunks [][]byte) []byte {
		var out []byte
		for _, p := range chunks {
			orig := append([]byte(nil), p...)
			out = append(out, c.sent(p, 1)...)
			if string(orig) != string(p) {
				t.Fatal("sent changed the caller's buffer")
			}
		}
		return out
	}
	recv := func(c *wireConn, chunks [][]byte) []byte {
		var out []byte
		for _, p := range chunks {
			c.received(p)
			out = append(out, p...)
		}
		return out
	}

	for ci := range 22 {
		w := &wire{}
		w.zxid.Store(0x500) // seen on an earlier connection of the session
		c := &wireConn{w: w}
		c.out.init(connectRequestLen, reqHeaderLen)
		c.in.init(handshakeLen, replyHeaderLen)
		cut := func(b []byte) [][]byte { cs := chunkings(b, rng); return cs[ci%len(cs)] }

		out := append(append(append(append([]byte(nil), connectReq...), getData...), setWatches...), ping...)
		got := send(c, cut(out))
		wantOut := append(append(append(want(connectReq, 8, 0x500), getData...), want(setWatches, 12, 0x500)...), ping...)
		if string(got) != string(wantOut) {
			t.Fatalf("chunking %d: requests written\n%x\nwant\n%x", ci, got, wantOut)
		}

		in := append(connectResponse(4000, 0x77), replyZxid(1, 0x600, 9)...)
		in = append(in, replyZxid(-1, 0x650, 20)...) // a watch event
		in = append(in, replyZxid(-2, 0x650, 0)...)  // the ping's answer
		in = append(in, replyZxid(2, 0x700, 0)...)   // setWatches'
		got = recv(c, cut(append([]byte(nil), in...)))
		wantIn := append([]byte(nil), in...)
		off := len(connectResponse(4000, 0x77))
		wantIn = want(wantIn, off+8, 0)
		wantIn = want(wantIn, off+len(replyZxid(1, 0, 9))+len(replyZxid(-1, 0, 20))+len(replyZxid(-2, 0, 0))+8, 0)
		if string(got) != string(wantIn) {
			t.Fatalf("chunking %d: replies read\n%x\nwant\n%x", ci, got, wantIn)
		}
		if got := w.zxid.Load(); got != 0x700 {
			t.Fatalf("chunking %d: zxid %#x, want 0x700", ci, got)
		}

		// The next connection of the session starts from 0x700; a refused
		// one (the session expired) starts the next from 0.
		c2 := &wireConn{w: w}
		c2.out.init(connectRequestLen, reqHeaderLen)
		c2.in.init(handshakeLen, replyHeaderLen)
		if got := send(c2, cut(connectReq)); string(got) != string(want(connectReq, 8, 0x700)) {
			t.Fatalf("chunking %d: second ConnectRequest %x", ci, got)
		}
		recv(c2, cut(connectResponse(0, 0)))
		c3 := &wireConn{w: w}
		c3.out.init(connectRequestLen, reqHeaderLen)
		if got := send(c3, cut(connectReq)); string(got) != string(connectReq) {
			t.Fatalf("chunking %d: the ConnectRequest after an expiry %x", ci, got)
		}
	}
}

// replyFrame is a reply: xid, zxid, err, then body.
func replyFrame(xid int32, zxid int64, code int32, body []byte) []byte {
	f := binary.BigEndian.AppendUint32(nil, 0)
	f = binary.BigEndian.AppendUint32(f, uint32(xid))
	f = binary.BigEndian.AppendUint64(f, uint64(zxid))
	f = binary.BigEndian.AppendUint32(f, uint32(code))
	f = append(f, body...)
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	return f
}

// The replies to the Wire's own requests reach their calls whole (error
// code and body), and go-zookeeper reads them as replies to a ping; every
// other frame passes unchanged (but for the zxid of replies), however the
// stream is cut.
func TestWireTakesItsReplies(t *testing.T) {
	long := make([]byte, 3000)
	for i := range long {
		long[i] = byte(i)
	}
	const a, b = 0x40000005, 0x41000107 // the Wire's xids
	frames := [][]byte{
		replyFrame(5, 0, 0, []byte("go-zookeeper's")),
		replyFrame(a, 0, 0, long),
		replyFrame(-1, 0, 0, []byte("a watch event")),
		replyFrame(b, 0, -101, nil),
		replyFrame(-2, 0, 0, nil),
		replyFrame(6, 0, 0, nil),
	}
	var stream, want []byte
	for _, f := range frames {
		stream = append(stream, f...)
		g := append([]byte(nil), f...)
		if xid := int32(binary.BigEndian.Uint32(g[4:8])); xid == a || xid == b {
			ping := int32(xidPing)
			binary.BigEndian.PutUint32(g[4:8], uint32(ping))
		}
		want = append(want, g...)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for ci, chunks := range chunkings(stream, rng) {
		c := &wireConn{w: &wire{}}
		c.in.init(handshakeLen, replyHeaderLen)
		c.received(connectResponse(4000, 1))
		calls := map[int32]*wireCall{}
		for _, x := range []int32{a, b} {
			calls[x] = &wireCall{xid: x, done: make(chan struct{})}
		}
		c.calls = map[int32]*wireCall{a: calls[a], b: calls[b]}
		c.tops[0x40]++
		c.tops[0x41]++
		var got []byte
		for _, ch := range chunks {
			p := append([]byte(nil), ch...)
			c.received(p)
			got = append(got, p...)
		}
		if string(got) != string(want) {
			t.Fatalf("chunking %d: go-zookeeper reads another stream", ci)
		}
		for x, body := range map[int32][]byte{a: long, b: nil} {
			r := calls[x]
			select {
			case <-r.done:
			default:
				t.Fatalf("chunking %d: call %#x not finished", ci, x)
			}
			res, err := r.result()
			if x == a && (err != nil || string(res) != string(body)) {
				t.Fatalf("chunking %d: call %#x: %d bytes, %v", ci, x, len(res), err)
			}
			if x == b && err != zk.ErrNoNode {
				t.Fatalf("chunking %d: call %#x: %v", ci, x, err)
			}
		}
		if len(c.calls) != 0 || c.tops[0x40] != 0 || c.tops[0x41] != 0 {
			t.Fatalf("chunking %d: calls left %d", ci, len(c.calls))
		}
	}
}

// wirePath takes only the paths go-zookeeper takes.
func TestWirePath(t *testing.T) {
	for p, ok := range map[string]bool{
		"/a": true, "/a/b-c_d.e": true, "/a/...": true, "/a b": true,
		"": false, "/": false, "a": false, "/a/": false, "//a": false, "/a//b": false,
		"/.": false, "/a/..": false, "/a/./b": false, "/a\x00": false, "/a\x7f": false, "/é": false,
	} {
		if wirePath(p) != ok {
			t.Errorf("wirePath(%q) = %v", p, !ok)
		}
	}
}
