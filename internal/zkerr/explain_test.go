package zkerr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Explain says what to check once, however many layers explain or name
// the error, keeps the error in the chain, and leaves other errors alone.
func TestExplainOnce(t *testing.T) {
	for _, base := range []error{zk.ErrNoAuth, zk.ErrAuthFailed, zk.ErrInvalidACL} {
		once := zkerr.Explain(fmt.Errorf("create /a: %w", base))
		twice := zkerr.Named("mutex /a", zkerr.Explain(once))
		if !errors.Is(twice, base) {
			t.Errorf("%v: lost from the chain: %v", base, twice)
		}
		hint := strings.TrimPrefix(once.Error(), "create /a: "+base.Error())
		if hint == "" || strings.Count(twice.Error(), hint) != 1 {
			t.Errorf("%v: hint %q not once in %q", base, hint, twice)
		}
		if named := zkerr.Named("queue /q", base); !strings.Contains(named.Error(), hint) {
			t.Errorf("%v: Named does not explain: %v", base, named)
		}
	}
	if zkerr.Explain(nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
	if err := zkerr.Explain(zk.ErrNoNode); err != zk.ErrNoNode {
		t.Errorf("Explain changed %v", err)
	}
	if !zkerr.IsRefused(fmt.Errorf("x: %w", zk.ErrNoAuth)) || zkerr.IsRefused(zk.ErrNoNode) {
		t.Error("IsRefused")
	}
}
