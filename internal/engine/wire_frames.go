package engine

// Frames: how the Wire finds ZooKeeper's frames, and the fields it reads
// and rewrites in them, in the bytes go-zookeeper writes and reads.

import (
	"encoding/binary"
)

// frameParser splits a byte stream into ZooKeeper frames (a big-endian
// int32 length, then that many bytes) and hands out the first bytes of
// each, however the frames are split or coalesced across reads or writes.
// The first frame's header is firstLen bytes, every later one's nextLen
// (a frame shorter than that gives all it has). It does not allocate.
type frameParser struct {
	hdr      [maxHeaderLen]byte
	n        int   // bytes of hdr filled
	want     int   // header bytes wanted for the current frame; 0 = length not known yet
	size     int64 // 4 + the current frame's length, once known
	skip     int64 // bytes of the last frame still to pass over
	frames   uint64
	firstLen int
	nextLen  int
}

func (f *frameParser) init(firstLen, nextLen int) {
	f.firstLen, f.nextLen = firstLen, nextLen
}

// headerBytes is a run of header bytes the parser took from a buffer.
type headerBytes struct {
	seg   []byte // the bytes just taken, in the caller's buffer
	off   int    // seg's offset in its frame
	hdr   []byte // the header so far, length prefix included (valid until the next call)
	index uint64 // the frame's index on the stream
	done  bool   // hdr is the whole header
}

// next consumes p up to the end of the next run of header bytes: it stops
// when a header is complete, when the length prefix is in, or when p runs
// out. It returns that run and the rest of p; ok is false when p held no
// header bytes. Bytes after a header pass over unseen.
func (f *frameParser) next(p []byte) (h headerBytes, rest []byte, ok bool) {
	for len(p) > 0 {
		if f.skip > 0 {
			k := int64(len(p))
			if k > f.skip {
				k = f.skip
			}
			f.skip -= k
			p = p[k:]
			continue
		}
		limit := 4
		if f.want > 0 {
			limit = f.want
		}
		off := f.n
		k := copy(f.hdr[f.n:limit], p)
		f.n += k
		h = headerBytes{seg: p[:k], off: off, index: f.frames}
		p = p[k:]
		if f.n < limit {
			h.hdr = f.hdr[:f.n]
			return h, p, true
		}
		if f.want == 0 { // the length prefix is in
			size := int64(int32(binary.BigEndian.Uint32(f.hdr[:4])))
			if size < 0 {
				size = 0
			}
			want := f.nextLen
			if f.frames == 0 {
				want = f.firstLen
			}
			if int64(want) > 4+size {
				want = int(4 + size)
			}
			f.want, f.size = want, 4+size
			if f.n < f.want {
				h.hdr = f.hdr[:f.n]
				return h, p, true
			}
		}
		f.skip = f.size - int64(f.n)
		h.hdr, h.done = f.hdr[:f.n], true
		f.frames++
		f.n, f.want = 0, 0
		return h, p, true
	}
	return h, nil, false
}

// putZxid writes v, big-endian, at frame offsets [at, at+8), into the part
// of the frame that seg holds (frame offsets [off, off+len(seg))).
func putZxid(seg []byte, off, at int, v int64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	for i := max(off, at); i < min(off+len(seg), at+8); i++ {
		seg[i-off] = b[i-at]
	}
}

// overlaps tells whether seg, at frame offset off, holds any byte of the
// zxid at frame offsets [at, at+8).
func overlaps(seg []byte, off, at int) bool { return off < at+8 && off+len(seg) > at }

// received reads the reply frames in p, and zeroes the zxid of every reply
// to a request in it (see Wire). The replies to the Wire's own requests
// it takes, and hands on to go-zookeeper as replies to a ping.
func (c *wireConn) received(p []byte) {
	c.mu.Lock()
	active := c.active
	c.mu.Unlock()
	if active {
		c.w.lastRecv.Store(wireNow())
	}
	for {
		if r := c.capt; r != nil && len(p) > 0 { // the rest of a reply of the Wire's
			k := min(int64(len(p)), c.in.skip)
			r.reply = append(r.reply, p[:k]...)
			c.in.skip -= k
			p = p[k:]
			if c.in.skip == 0 {
				c.capt = nil
				c.finish(r)
			}
			continue
		}
		h, rest, ok := c.in.next(p)
		if !ok {
			return
		}
		p = rest
		if h.index == 0 {
			if h.done && len(h.hdr) == handshakeLen {
				c.handshake(h.hdr)
			}
			continue
		}
		if h.off == 0 {
			c.ours = false
		}
		if h.off <= 4 && h.off+len(h.seg) > 4 { // the xid's first byte
			c.mu.Lock()
			c.ours = c.tops[h.hdr[4]] > 0
			c.mu.Unlock()
		}
		if c.ours && overlapsXid(h.seg, h.off) {
			putXid(h.seg, h.off, xidPing)
		}
		if len(h.hdr) < 8 {
			continue
		}
		xid := int32(binary.BigEndian.Uint32(h.hdr[4:8]))
		if xid == xidWatchEvent {
			continue
		}
		// A reply to a request (xid ≥ 0; pings have -2, and go-zookeeper
		// keeps no zxid of them) reaches go-zookeeper with zxid 0.
		if xid >= 0 && overlaps(h.seg, h.off, replyZxidAt) {
			putZxid(h.seg, h.off, replyZxidAt, 0)
		}
		if !h.done {
			continue
		}
		if xid >= 0 && len(h.hdr) >= replyHeaderLen {
			c.w.saw(int64(binary.BigEndian.Uint64(h.hdr[replyZxidAt : replyZxidAt+8])))
		}
		c.mu.Lock()
		sent, active := c.pend.answer(xid), c.active
		var r *wireCall
		if c.ours {
			r = c.calls[xid]
		}
		c.mu.Unlock()
		if active && sent != 0 {
			c.w.acked(sent)
		}
		if r != nil {
			c.ours = false
			if c.in.skip == 0 {
				c.finish(r)
			} else {
				r.reply = make([]byte, 0, c.in.skip)
				c.capt = r
			}
		}
	}
}

// overlapsXid tells whether seg, at frame offset off, holds any byte of a
// reply's xid (frame offsets [4, 8)).
func overlapsXid(seg []byte, off int) bool { return off < 8 && off+len(seg) > 4 }

// putXid writes v, big-endian, at frame offsets [4, 8), into the part of
// the frame that seg holds.
func putXid(seg []byte, off int, v int32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(v))
	for i := max(off, 4); i < min(off+len(seg), 8); i++ {
		seg[i-off] = b[i-4]
	}
}
