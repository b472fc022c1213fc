package engine

// The jute encoding of the Wire's own requests and replies.

import (
	"encoding/binary"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// jute appends the request encodings (big-endian, strings and buffers
// with an int32 length, -1 for a nil buffer).
type jute []byte

func newFrame(size int) jute { return make(jute, 12, 12+size) }

func (b jute) int32(v int32) jute { return binary.BigEndian.AppendUint32(b, uint32(v)) }

func (b jute) str(s string) jute { return append(b.int32(int32(len(s))), s...) }

func (b jute) buf(p []byte) jute {
	if p == nil {
		return b.int32(-1)
	}
	return append(b.int32(int32(len(p))), p...)
}

func (b jute) boolean(v bool) jute {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func (b jute) acl(acl []zk.ACL) jute {
	b = b.int32(int32(len(acl)))
	for _, a := range acl {
		b = b.int32(a.Perms).str(a.Scheme).str(a.ID)
	}
	return b
}

// reader decodes a reply body; a short body sets bad.
type reader struct {
	p   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if n < 0 || len(r.p) < n {
		r.bad, r.p = true, nil
		return nil
	}
	v := r.p[:n]
	r.p = r.p[n:]
	return v
}

func (r *reader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) int64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) str() string { return string(r.take(int(r.int32()))) }

// buf reads a buffer as go-zookeeper does: nil for -1, else a copy.
func (r *reader) buf() []byte {
	n := r.int32()
	if n < 0 {
		return nil
	}
	b := r.take(int(n))
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func (r *reader) stat() *zk.Stat {
	return &zk.Stat{
		Czxid: r.int64(), Mzxid: r.int64(), Ctime: r.int64(), Mtime: r.int64(),
		Version: r.int32(), Cversion: r.int32(), Aversion: r.int32(),
		EphemeralOwner: r.int64(), DataLength: r.int32(), NumChildren: r.int32(), Pzxid: r.int64(),
	}
}

// strs reads a vector of strings (empty, not nil, when there are none, as
// go-zookeeper's).
func (r *reader) strs() []string {
	n := r.int32()
	if n < 0 || int(n) > len(r.p)/4 {
		if n != 0 {
			r.bad = true
		}
		return []string{}
	}
	v := make([]string, n)
	for i := range v {
		v[i] = r.str()
	}
	return v
}

// err returns an error when the body was short (the connection is then
// of no use: go-zookeeper would fail the same way).
func (r *reader) err() error {
	if r.bad {
		return fmt.Errorf("zkrecipes: a malformed reply: %w", zk.ErrConnectionClosed)
	}
	return nil
}
