package cache

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// The cache's nodes in memory (139 heap bytes per node of 100-byte
// values at 101,001 nodes, where a map of Node values took 358): a tree
// of slots addressed by int32 index, each a packed reference to one
// immutable record of bytes, [header][name][stat][data], in a chunked
// append-only arena, and, for a node with cached children, a sorted list
// of its children's slots.
// No node holds its path: paths are rebuilt from the names on the way
// down. A change appends a new record (bytes once written are never
// written again: a Node's Data, handed to callers and listeners, is a
// sub-slice of a record, and a chunk lives as long as one is held), and
// the arena is compacted into fresh chunks once most of it is garbage.
//
// The header is a uvarint: the name's length << 1, | 1 when the data is
// nil (WithoutData, or nil from the server). The stat is packed by
// appendStat.

const (
	chunkMin = 1 << 10  // the first chunk's size; each next doubles
	chunkMax = 64 << 10 // the largest chunk (offsets fit 16 bits)
	// bigRecord: a longer record gets an allocation of its own (freed as
	// soon as its node changes or goes).
	bigRecord = chunkMax / 4
	// compactMin is the garbage the arena keeps at least before it is
	// compacted (beside more garbage than live bytes).
	compactMin = 4 * chunkMax

	bigRef  = uint64(1) << 63 // a ref to bigs[ref&0xffffffff]
	freeRef = ^uint64(0)      // a free slot
	noList  = 0               // kids of a slot without cached children
)

// arena holds records. A ref is chunk<<32 | offset<<16 | length for a
// record in a chunk, or bigRef | index for one of its own.
type arena struct {
	chunks   [][]byte // len: the bytes taken
	bigs     [][]byte
	freeBigs []uint32
	live     int // bytes of live records in chunks
	used     int // bytes of chunks taken: records live or dead, and abandoned tails
	first    int // the first chunk's size (set by compaction)
}

// alloc returns a new record of n bytes (n > 0) and its ref.
func (a *arena) alloc(n int) (uint64, []byte) {
	if n > bigRecord {
		b := make([]byte, n)
		var i uint32
		if k := len(a.freeBigs); k > 0 {
			i = a.freeBigs[k-1]
			a.freeBigs = a.freeBigs[:k-1]
			a.bigs[i] = b
		} else {
			i = uint32(len(a.bigs))
			a.bigs = append(a.bigs, b)
		}
		return bigRef | uint64(i), b
	}
	k := len(a.chunks) - 1
	if k < 0 || cap(a.chunks[k])-len(a.chunks[k]) < n {
		size := max(chunkMin, a.first)
		if k >= 0 {
			a.used += cap(a.chunks[k]) - len(a.chunks[k])
			size = min(chunkMax, 2*cap(a.chunks[k]))
		}
		for size < n {
			size *= 2
		}
		a.chunks = append(a.chunks, make([]byte, 0, size))
		k++
	}
	c := a.chunks[k]
	off := len(c)
	a.chunks[k] = c[:off+n]
	a.live += n
	a.used += n
	return uint64(k)<<32 | uint64(off)<<16 | uint64(n), c[off : off+n : off+n]
}

// get returns the record of ref, its capacity capped.
func (a *arena) get(ref uint64) []byte {
	if ref&bigRef != 0 {
		return a.bigs[uint32(ref)]
	}
	off, n := int(ref>>16&0xffff), int(ref&0xffff)
	return a.chunks[ref>>32][off : off+n : off+n]
}

// release drops the record of ref (its bytes stay as they are).
func (a *arena) release(ref uint64) {
	if ref&bigRef != 0 {
		i := uint32(ref)
		a.bigs[i] = nil
		a.freeBigs = append(a.freeBigs, i)
		return
	}
	a.live -= int(ref & 0xffff)
}

// wasteful reports whether the arena should be compacted.
func (a *arena) wasteful() bool {
	g := a.used - a.live
	return g > a.live && g > compactMin
}

// store is the cache's tree (see above). Slot i has refs[i] (freeRef
// when free) and kids[i], an index in lists (noList: no cached
// children); lists[noList] stays nil.
type store struct {
	arena
	refs      []uint64
	kids      []int32
	lists     [][]int32 // each sorted by the children's names
	freeSlots []int32
	freeLists []int32
	root      int32 // -1: none
	n         int   // live slots

	based              bool  // the bases are set (by the first record)
	baseZxid, baseTime int64 // what czxid and ctime are packed against
	scratch            [2 * binary.MaxVarintLen64 * 12]byte
}

func newStore() *store {
	return &store{root: -1, lists: make([][]int32, 1)}
}

// size returns the number of nodes.
func (s *store) size() int { return s.n }

// record appends a record and returns its ref.
func (s *store) record(name string, data []byte, st *zk.Stat) uint64 {
	if !s.based {
		s.based, s.baseZxid, s.baseTime = true, st.Czxid, st.Ctime
	}
	h := uint64(len(name)) << 1
	if data == nil {
		h |= 1
	}
	b := binary.AppendUvarint(s.scratch[:0], h)
	hdr := len(b)
	b = appendStat(b, st, s.baseZxid, s.baseTime)
	ref, r := s.alloc(len(b) + len(name) + len(data))
	copy(r, b[:hdr])
	copy(r[hdr:], name)
	copy(r[hdr+len(name):], b[hdr:])
	copy(r[hdr+len(name)+len(b)-hdr:], data)
	return ref
}

// parse splits slot's record: its name, its packed stat and data, and
// whether the data is nil.
func (s *store) parse(slot int32) (name, rest []byte, nilData bool) {
	r := s.get(s.refs[slot])
	h, k := binary.Uvarint(r)
	end := k + int(h>>1)
	return r[k:end], r[end:], h&1 != 0
}

// name returns slot's name (the root's is empty).
func (s *store) name(slot int32) []byte {
	r := s.get(s.refs[slot])
	h, k := binary.Uvarint(r)
	return r[k : k+int(h>>1)]
}

// node returns slot's data (a capped sub-slice of its record: never
// modify it) and stat.
func (s *store) node(slot int32) ([]byte, zk.Stat) {
	_, rest, nilData := s.parse(slot)
	st, n, _ := unpackStat(rest, s.baseZxid, s.baseTime)
	if nilData {
		return nil, st
	}
	return rest[n:len(rest):len(rest)], st
}

// czxid returns slot's czxid.
func (s *store) czxid(slot int32) int64 {
	_, rest, _ := s.parse(slot)
	u, _ := binary.Uvarint(rest)
	return unzig(u) + s.baseZxid
}

// children returns slot's children, sorted by name (the store's own
// list: do not modify it, and do not hold it across a change).
func (s *store) children(slot int32) []int32 { return s.lists[s.kids[slot]] }

// child returns the slot of p's child name (-1: none) and its place in
// p's list (where it would go).
func (s *store) child(p int32, name string) (int32, int) {
	l := s.lists[s.kids[p]]
	i, j := 0, len(l)
	for i < j {
		h := int(uint(i+j) >> 1)
		if string(s.name(l[h])) < name {
			i = h + 1
		} else {
			j = h
		}
	}
	if i < len(l) && string(s.name(l[i])) == name {
		return l[i], i
	}
	return -1, i
}

// find returns the slot at rel ("" for the root, else names joined by
// "/") and its parent's (-1 for the root); slot -1 when there is none,
// parent -1 too when the parent is missing.
func (s *store) find(rel string) (slot, parent int32) {
	if s.root < 0 {
		return -1, -1
	}
	if rel == "" {
		return s.root, -1
	}
	cur := s.root
	for {
		comp := rel
		i := strings.IndexByte(rel, '/')
		if i >= 0 {
			comp = rel[:i]
		}
		next, _ := s.child(cur, comp)
		if i < 0 {
			return next, cur
		}
		if next < 0 {
			return -1, -1
		}
		cur, rel = next, rel[i+1:]
	}
}

func (s *store) newSlot(ref uint64) int32 {
	s.n++
	if k := len(s.freeSlots); k > 0 {
		i := s.freeSlots[k-1]
		s.freeSlots = s.freeSlots[:k-1]
		s.refs[i], s.kids[i] = ref, noList
		return i
	}
	s.refs = append(s.refs, ref)
	s.kids = append(s.kids, noList)
	return int32(len(s.refs) - 1)
}

// setRoot puts the root in an empty store.
func (s *store) setRoot(data []byte, st *zk.Stat) int32 {
	s.root = s.newSlot(s.record("", data, st))
	return s.root
}

// insert adds a child name (not there yet) to p and returns its slot.
func (s *store) insert(p int32, name string, data []byte, st *zk.Stat) int32 {
	_, i := s.child(p, name)
	slot := s.newSlot(s.record(name, data, st))
	li := s.kids[p]
	if li == noList {
		if k := len(s.freeLists); k > 0 {
			li = s.freeLists[k-1]
			s.freeLists = s.freeLists[:k-1]
		} else {
			li = int32(len(s.lists))
			s.lists = append(s.lists, nil)
		}
		s.kids[p] = li
	}
	s.lists[li] = slices.Insert(s.lists[li], i, slot)
	return slot
}

// replace gives slot a new record with its name, data and st.
func (s *store) replace(slot int32, data []byte, st *zk.Stat) {
	old := s.refs[slot]
	s.refs[slot] = s.record(string(s.name(slot)), data, st)
	s.release(old)
	s.compactIfWasteful()
}

// unlink takes child out of p's list (child stays allocated).
func (s *store) unlink(p, child int32) {
	_, i := s.child(p, string(s.name(child)))
	li := s.kids[p]
	l := slices.Delete(s.lists[li], i, i+1)
	if len(l) == 0 {
		s.lists[li] = nil
		s.kids[p] = noList
		s.freeLists = append(s.freeLists, li)
		return
	}
	s.lists[li] = l
}

// free drops slot and its record, and its list of children (not the
// children: free them first), not its place in its parent's list
// (unlink).
func (s *store) free(slot int32) {
	if li := s.kids[slot]; li != noList {
		s.lists[li] = nil
		s.freeLists = append(s.freeLists, li)
	}
	s.release(s.refs[slot])
	s.refs[slot], s.kids[slot] = freeRef, noList
	s.freeSlots = append(s.freeSlots, slot)
	s.n--
	if slot == s.root {
		s.root = -1
	}
	s.compactIfWasteful()
}

// compactIfWasteful copies the live records into fresh chunks when most
// of the arena is garbage. The old chunks stay as they are for whoever
// holds a slice of them.
func (s *store) compactIfWasteful() {
	if !s.wasteful() {
		return
	}
	old := s.chunks
	s.first = min(chunkMax, max(chunkMin, 1<<bits.Len(uint(s.live))))
	s.chunks, s.used, s.live = nil, 0, 0
	for i, ref := range s.refs {
		if ref == freeRef || ref&bigRef != 0 {
			continue
		}
		off, n := int(ref>>16&0xffff), int(ref&0xffff)
		nref, b := s.alloc(n)
		copy(b, old[ref>>32][off:off+n])
		s.refs[i] = nref
	}
}

// appendStat appends st packed (lossless for any values): czxid and ctime
// against the store's bases, mzxid, pzxid and mtime against czxid and
// ctime, each a zigzag varint; the versions, dataLength and numChildren
// zigzag varints; ephemeralOwner a uvarint (one byte when 0).
func appendStat(b []byte, st *zk.Stat, baseZxid, baseTime int64) []byte {
	b = binary.AppendUvarint(b, zig(st.Czxid-baseZxid))
	b = binary.AppendUvarint(b, zig(st.Mzxid-st.Czxid))
	b = binary.AppendUvarint(b, zig(st.Pzxid-st.Czxid))
	b = binary.AppendUvarint(b, zig(st.Ctime-baseTime))
	b = binary.AppendUvarint(b, zig(st.Mtime-st.Ctime))
	b = binary.AppendUvarint(b, zig(int64(st.Version)))
	b = binary.AppendUvarint(b, zig(int64(st.Cversion)))
	b = binary.AppendUvarint(b, zig(int64(st.Aversion)))
	b = binary.AppendUvarint(b, uint64(st.EphemeralOwner))
	b = binary.AppendUvarint(b, zig(int64(st.DataLength)))
	b = binary.AppendUvarint(b, zig(int64(st.NumChildren)))
	return b
}

// unpackStat reads what appendStat wrote: the stat, the bytes it took,
// and false when b is not such a stat.
func unpackStat(b []byte, baseZxid, baseTime int64) (zk.Stat, int, bool) {
	var v [11]uint64
	n := 0
	for i := range v {
		u, k := binary.Uvarint(b[n:])
		if k <= 0 {
			return zk.Stat{}, 0, false
		}
		v[i] = u
		n += k
	}
	var st zk.Stat
	st.Czxid = unzig(v[0]) + baseZxid
	st.Mzxid = unzig(v[1]) + st.Czxid
	st.Pzxid = unzig(v[2]) + st.Czxid
	st.Ctime = unzig(v[3]) + baseTime
	st.Mtime = unzig(v[4]) + st.Ctime
	st.Version = int32(unzig(v[5]))
	st.Cversion = int32(unzig(v[6]))
	st.Aversion = int32(unzig(v[7]))
	st.EphemeralOwner = int64(v[8])
	st.DataLength = int32(unzig(v[9]))
	st.NumChildren = int32(unzig(v[10]))
	return st, n, true
}

// zig is zigzag encoding (small magnitudes, small varints); the
// differences above wrap around, and so do the sums that undo them.
func zig(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzig(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
