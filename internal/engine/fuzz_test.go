package engine

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Fuzz targets for the parsers every recipe relies on: path validation,
// sort keys, and the uuid of a protected node's name. Run one at a time:
//
//	go test -run XXX -fuzz FuzzValidatePath -fuzztime 30s ./recipes/
//
// (make fuzz runs each for a bounded time). Inputs that once failed are
// kept in testdata/fuzz/<target>/ and run by every go test.

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
