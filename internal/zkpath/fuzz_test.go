package zkpath

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
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
		err := ValidatePath(p)
		if zkOK := zkAcceptsPath(p); (err == nil) != zkOK {
			verdict := "refuses"
			if zkOK {
				verdict = "accepts"
			}
			t.Fatalf("ValidatePath(%q) = %v, but ZooKeeper %s it", p, err, verdict)
		}
		if err != nil {
			if !errors.Is(err, zkerr.ErrInvalidPath) {
				t.Fatalf("ValidatePath(%q) = %v, which does not wrap zkerr.ErrInvalidPath", p, err)
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
		parent, name := SplitPath(p)
		if got := JoinPath(parent, name); got != p {
			t.Fatalf("JoinPath(SplitPath(%q)) = %q (parent %q, name %q)", p, got, parent, name)
		}
		if p == "/" {
			return
		}
		if name == "" || strings.Contains(name, "/") {
			t.Fatalf("SplitPath(%q): name %q", p, name)
		}
		if err := ValidatePath(parent); err != nil {
			t.Fatalf("SplitPath(%q): parent %q is not valid: %v", p, parent, err)
		}
		if got := JoinPath(parent, "x"); ValidatePath(got) != nil || !strings.HasPrefix(got, parent) {
			t.Fatalf("JoinPath(%q, \"x\") = %q", parent, got)
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
