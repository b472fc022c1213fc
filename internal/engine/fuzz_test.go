package engine

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Fuzz targets for the parsers every recipe relies on: path validation,
// sort keys, and the uuid of a protected node's name. Run one at a time:
//
//	go test -run XXX -fuzz FuzzValidatePath -fuzztime 30s ./recipes/
//
// (make fuzz runs each for a bounded time). Inputs that once failed are
// kept in testdata/fuzz/<target>/ and run by every go test.

// FuzzValidatePath checks that ValidatePath never panics, that every error
// wraps ErrInvalidPath, that it accepts exactly the paths ZooKeeper accepts
// (zkAcceptsPath, an independent copy of the server's PathUtils.validatePath
// and go-zookeeper's client-side check), and that accepted paths have no NUL,
// no empty, "." or ".." segment and no trailing slash, and round-trip through
// SplitPath and JoinPath.
func FuzzValidatePath(f *testing.F) {
	for _, p := range []string{
		"", "/", "rel", "a/b", "/a", "/a/b", "/a/", "/trailing/", "//", "/a//b",
		"/.", "/..", "/...", "/a/.", "/a/..", "/a/./b", "/a/../b", "/a/.b", "/a/b.", "/a/..b",
		"/nul\x00", "/\x00", "/ctl\x01", "/\x1f", "/del\x7f", "/\u0080", "/\u009f", "/\u00a0",
		"/bad\xff", "/\xc3", "/\xed\xa0\x80", "/\ufffd", "/\ufffe", "/\uffff", "/\ufff0", "/\uffef",
		"/\ud7ff", "/\ue000", "/\uf8ff", "/\uf900", "/ünïcode", "/日本/語",
		"/locks/_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-lock-0000000001",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := zkpath.ValidatePath(p)
		if zkOK := zkAcceptsPath(p); (err == nil) != zkOK {
			verdict := "refuses"
			if zkOK {
				verdict = "accepts"
			}
			t.Fatalf("zkpath.ValidatePath(%q) = %v, but ZooKeeper %s it", p, err, verdict)
		}
		if err != nil {
			if !errors.Is(err, zkerr.ErrInvalidPath) {
				t.Fatalf("zkpath.ValidatePath(%q) = %v, which does not wrap zkerr.ErrInvalidPath", p, err)
			}
			return
		}
		switch {
		case !strings.HasPrefix(p, "/"):
			t.Fatalf("accepted %q: not absolute", p)
		case strings.IndexByte(p, 0) >= 0:
			t.Fatalf("accepted %q: contains NUL", p)
		case p != "/" && strings.HasSuffix(p, "/"):
			t.Fatalf("accepted %q: trailing slash", p)
		case !utf8.ValidString(p):
			t.Fatalf("accepted %q: not UTF-8", p)
		}
		if p != "/" {
			for _, seg := range strings.Split(p[1:], "/") {
				if seg == "" || seg == "." || seg == ".." {
					t.Fatalf("accepted %q: segment %q", p, seg)
				}
			}
		}
		parent, name := zkpath.SplitPath(p)
		if got := zkpath.JoinPath(parent, name); got != p {
			t.Fatalf("zkpath.JoinPath(zkpath.SplitPath(%q)) = %q (parent %q, name %q)", p, got, parent, name)
		}
		if p == "/" {
			return
		}
		if name == "" || strings.Contains(name, "/") {
			t.Fatalf("zkpath.SplitPath(%q): name %q", p, name)
		}
		if err := zkpath.ValidatePath(parent); err != nil {
			t.Fatalf("zkpath.SplitPath(%q): parent %q is not valid: %v", p, parent, err)
		}
		if got := zkpath.JoinPath(parent, "x"); zkpath.ValidatePath(got) != nil || !strings.HasPrefix(got, parent) {
			t.Fatalf("zkpath.JoinPath(%q, \"x\") = %q", parent, got)
		}
	})
}

// zkAcceptsPath reports whether a create of path p can succeed as far as
// its syntax goes: ZooKeeper's PathUtils.validatePath, which the server
// applies to a create, and go-zookeeper's own check before it sends one.
// The server sees the path as Java does, in UTF-16 code units (a character
// outside the BMP is a surrogate pair, which it refuses) after decoding the
// UTF-8 bytes (malformed ones becoming U+FFFD, which it refuses too).
// go-zookeeper refuses U+007F as well, which the server's check does not.
func zkAcceptsPath(p string) bool {
	cs := utf16.Encode([]rune(p)) // []rune turns malformed bytes into U+FFFD
	n := len(cs)
	if n == 0 || cs[0] != '/' {
		return false
	}
	if n == 1 {
		return true
	}
	if cs[n-1] == '/' {
		return false
	}
	for i := 1; i < n; i++ {
		c, last := cs[i], cs[i-1]
		switch {
		case c == 0:
			return false
		case c == '/' && last == '/':
			return false
		case c == '.' && last == '.':
			if cs[i-2] == '/' && (i+1 == n || cs[i+1] == '/') {
				return false
			}
		case c == '.':
			if last == '/' && (i+1 == n || cs[i+1] == '/') {
				return false
			}
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			return false
		}
	}
	return true
}

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

// FuzzProtectedUUID checks the parser of protected names, which decides
// which names the process-wide record of gone contenders may keep: it never
// panics; when it finds a uuid, the name starts with _c_<uuid>-, the uuid
// has the dashed 8-4-4-4-12 hex form, and protectedPrefixOf and isProtected
// agree with it, and so does ParseProtected (the prefix and its rest make
// the name); a name made from any 16 bytes in that form, followed by
// anything, is recognised; go-zookeeper's and Kazoo's names are not.
func FuzzProtectedUUID(f *testing.F) {
	for _, s := range []string{
		"", "_c_", "_c_-", "_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f",
		"_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-",
		"_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-lock-0000000001",
		"_c_0F8B3C1E-5D2A-4B6F-9C7E-1A2B3C4D5E6F-__READ__0000000001",
		"_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6g-lock-0000000001",
		"_c_0f8b3c1e_5d2a-4b6f-9c7e-1a2b3c4d5e6f-lock-0000000001",
		"_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f_lock-0000000001",
		"_c_4f1c2a9b8e7d6c5b4a39281706f5e4d3-lock-0000000001",
		"4f1c2a9b8e7d6c5b4a39281706f5e4d3__lock__0000000001",
		"_C_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-lock-0000000001",
		"_c_\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8-\xf7\xf6\xf5\xf4-\xf3\xf2\xf1\xf0-\xef\xee\xed\xec-\xeb\xea\xe9\xe8\xe7\xe6\xe5\xe4\xe3\xe2\xe1\xe0-x",
	} {
		f.Add(s, []byte("\x0f\x8b\x3c\x1e\x5d\x2a\x4b\x6f\x9c\x7e\x1a\x2b\x3c\x4d\x5e\x6f"), "-lock-0000000001")
	}
	f.Fuzz(func(t *testing.T, name string, raw []byte, rest string) {
		u, ok := protectedUUID(name)
		if ok != isProtected(name) {
			t.Fatalf("protectedUUID(%q) ok=%v, isProtected %v", name, ok, !ok)
		}
		prefix := protectedPrefixOf(name)
		if pu, rest, pok := zkpath.ParseProtected(name); pu != u || pok != ok || ok && prefix+rest != name || !ok && rest != "" {
			t.Fatalf("zkpath.ParseProtected(%q) = %q, %q, %v; protectedUUID %q, %v", name, pu, rest, pok, u, ok)
		}
		if ok {
			if !strings.HasPrefix(name, zkpath.ProtectedPrefix+u+"-") || !isDashedUUID(u) {
				t.Fatalf("protectedUUID(%q) = %q", name, u)
			}
			if prefix != zkpath.ProtectedPrefix+u+"-" {
				t.Fatalf("protectedPrefixOf(%q) = %q, uuid %q", name, prefix, u)
			}
		} else if u != "" || prefix != "" {
			t.Fatalf("protectedUUID(%q) = %q, false; protectedPrefixOf = %q", name, u, prefix)
		}

		var b [16]byte
		copy(b[:], raw)
		uuid := fuzzUUID(b)
		for _, id := range []string{uuid, strings.ToUpper(uuid)} {
			made := zkpath.ProtectedPrefix + id + "-" + rest
			if got, ok := protectedUUID(made); !ok || got != id {
				t.Fatalf("protectedUUID(%q) = %q, %v; want %q", made, got, ok, id)
			}
		}
		hex32 := hex.EncodeToString(b[:])
		for _, other := range []string{
			zkpath.ProtectedPrefix + hex32 + "-lock-" + rest, // go-zookeeper's zk.Lock
			hex32 + "__lock__" + rest,                        // Kazoo
		} {
			if got, ok := protectedUUID(other); ok {
				t.Fatalf("protectedUUID(%q) = %q, true: not a dashed uuid", other, got)
			}
		}
	})
}

func isDashedUUID(u string) bool {
	if len(u) != 36 {
		return false
	}
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
				return false
			}
		}
	}
	return true
}
