package contend

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// The lock names of the recipes and of the clients they share queues with.
var fuzzLockNames = []string{"lock-", "__READ__", "__WRIT__", "latch-", "lease-", "__lock__", "__rlock__", ""}

// FuzzSortKey checks SortKey on any name and lock names (Curator's,
// Kazoo's, go-zookeeper's, foreign ones, with any bytes): it never panics
// and the key is a suffix of the name. For well-formed names built from the
// input — Curator's _c_<uuid>-<lock name><seq>, Kazoo's <32 hex>__lock__<seq>,
// go-zookeeper's zk.Lock _c_<32 hex>-lock-<seq> — the key is the 10-digit
// sequence, through SortKey with the lock names each recipe passes and
// through Driver, and contenders sort by sequence whatever their
// uuids.
func FuzzSortKey(f *testing.F) {
	u := []byte("\x0f\x8b\x3c\x1e\x5d\x2a\x4b\x6f\x9c\x7e\x1a\x2b\x3c\x4d\x5e\x6f")
	for _, s := range []struct {
		name, lock, extra string
		seq               uint64
		raw               []byte
	}{
		{"_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-lock-0000000001", "lock-", "__lock__", 1, u},
		{"_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-__READ__0000000007", "__READ__", "__WRIT__", 7, u},
		{"_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-__WRIT__0000000008", "__READ__", "__WRIT__", 8, u},
		{"_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-latch-0000000002", "latch-", "lock-", 2, u},
		{"4f1c2a9b8e7d6c5b4a39281706f5e4d3__lock__0000000001", "lock-", "__lock__", 9999999999, u},
		{"_c_4f1c2a9b8e7d6c5b4a39281706f5e4d3-lock-0000000001", "lock-", "", 0, u},
		{"lock--1", "lock-", "", 1 << 63, nil},
		{"lock-99999999999999999999", "lock-", "", 10000000000, nil},
		{"lock-", "lock-", "lock-", 0, []byte{}},
		{"lock-lock-lock-", "lock-", "-", 42, []byte{0xff}},
		{"foreign-node", "lock-", "__lock__", 3, []byte("x")},
		{"\xff\xfe__lock__\x00", "__lock__", "\xff", 5, []byte{0, 0xff}},
		{"", "", "", 0, nil},
	} {
		f.Add(s.name, s.lock, s.extra, s.seq, s.raw)
	}
	f.Fuzz(func(t *testing.T, name, lockName, extra string, seq uint64, raw []byte) {
		// Any name, any lock names.
		for _, ln := range append([]string{lockName, extra}, fuzzLockNames...) {
			for _, ex := range [][]string{nil, {extra}, {extra, lockName}, fuzzLockNames} {
				key := SortKey(name, ln, ex...)
				if !strings.HasSuffix(name, key) {
					t.Fatalf("SortKey(%q, %q, %q) = %q: not a suffix of the name", name, ln, ex, key)
				}
				d := &Driver{Names: append([]string{ln}, ex...)}
				if got := d.SortKey(name); got != key {
					t.Fatalf("Driver%+v.SortKey(%q) = %q, SortKey = %q", *d, name, got, key)
				}
			}
		}

		// Well-formed names of every client, with a uuid and hex drawn
		// from the input.
		seq10 := fmt.Sprintf("%010d", seq%10_000_000_000)
		var b [16]byte
		copy(b[:], raw)
		uuid, hex32 := fuzzUUID(b), hex.EncodeToString(b[:])
		curator := func(lock string) string { return zkpath.ProtectedPrefix + uuid + "-" + lock + seq10 }
		for _, wf := range []struct {
			who, name, lock string
			extra           []string
		}{
			{"Curator mutex", curator("lock-"), "lock-", nil},
			{"Curator mutex, Kazoo-aware", curator("lock-"), "lock-", []string{"__lock__"}},
			{"Curator read lock", curator("__READ__"), "__READ__", []string{"__WRIT__"}},
			{"Curator write lock", curator("__WRIT__"), "__READ__", []string{"__WRIT__"}},
			{"Curator leader latch", curator("latch-"), "latch-", []string{"lock-"}},
			{"Curator leader selector", curator("lock-"), "latch-", []string{"lock-"}},
			{"Curator semaphore lease", curator("lease-"), "lease-", nil},
			{"Kazoo lock", hex32 + "__lock__" + seq10, "lock-", []string{"__lock__"}},
			{"go-zookeeper zk.Lock", zkpath.ProtectedPrefix + hex32 + "-lock-" + seq10, "lock-", []string{"__lock__"}},
		} {
			if got := SortKey(wf.name, wf.lock, wf.extra...); got != seq10 {
				t.Fatalf("%s: SortKey(%q, %q, %q) = %q, want %q", wf.who, wf.name, wf.lock, wf.extra, got, seq10)
			}
		}

		// Contenders sort by sequence, whatever their uuids.
		var r [16]byte
		for i := range b {
			r[i] = b[15-i] ^ 0x5a
		}
		next := fmt.Sprintf("%010d", (seq+1)%10_000_000_000)
		a := zkpath.ProtectedPrefix + uuid + "-lock-" + seq10
		z := zkpath.ProtectedPrefix + fuzzUUID(r) + "-lock-" + next
		k := hex.EncodeToString(r[:]) + "__lock__" + next
		d := &Driver{Names: []string{"lock-", "__lock__"}}
		got := SortContenders([]string{z, k, a}, d)
		if seq10 < next { // not wrapped around
			if got[0].Name != a {
				t.Fatalf("SortContenders: %v, want %s first", got, a)
			}
		}
		for i := 1; i < len(got); i++ {
			if compareContenders(got[i-1], got[i]) > 0 {
				t.Fatalf("SortContenders: %v is not in order", got)
			}
		}
	})
}

// fuzzUUID formats 16 bytes as a dashed UUID (without forcing a version).
func fuzzUUID(b [16]byte) string {
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
