package zkpath

import (
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "lock-", "_c_x", "é"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "nul\x00", "\x01"} {
		if err := ValidateName(bad); !errors.Is(err, zkerr.ErrInvalidPath) {
			t.Errorf("%q: %v, want ErrInvalidPath", bad, err)
		}
	}
}

func TestParseProtected(t *testing.T) {
	u := NewUUID()
	got, rest, ok := ParseProtected(ProtectedPrefix + u + "-lock-0000000001")
	if !ok || got != u || rest != "lock-0000000001" {
		t.Fatalf("ParseProtected: %q %q %v", got, rest, ok)
	}
	if _, _, ok := ParseProtected("lock-0000000001"); ok {
		t.Fatal("an unprotected name parsed")
	}
}
