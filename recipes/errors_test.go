package recipes_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// The sentinels are one set, defined once: each is told apart from every
// other by errors.Is (ErrClientClosed also matches ErrClosed, as its doc
// says), survives wrapping, and reads "zkrecipes: ...". Where the library
// returns each of them is in testdata/messages.txt.
func TestSentinelsErrorsIs(t *testing.T) {
	all := map[string]error{
		"ErrNilClient": recipes.ErrNilClient, "ErrClosed": recipes.ErrClosed,
		"ErrClientClosed": recipes.ErrClientClosed, "ErrInvalidPath": recipes.ErrInvalidPath,
		"ErrInvalidArgument": recipes.ErrInvalidArgument, "ErrSessionLost": recipes.ErrSessionLost,
		"ErrNotOwner": recipes.ErrNotOwner, "ErrNotHeld": recipes.ErrNotHeld,
		"ErrLockLost": recipes.ErrLockLost, "ErrNotAcquired": recipes.ErrNotAcquired,
		"ErrFenced": recipes.ErrFenced, "ErrNotConnected": recipes.ErrNotConnected,
		"ErrNotStarted": recipes.ErrNotStarted, "ErrAlreadyStarted": recipes.ErrAlreadyStarted,
		"ErrNoLeader": recipes.ErrNoLeader, "ErrUpgrade": recipes.ErrUpgrade,
		"ErrConflict": recipes.ErrConflict, "ErrCorrupt": recipes.ErrCorrupt, "ErrUnimplemented": recipes.ErrUnimplemented,
		"ErrUnknownOutcome": recipes.ErrUnknownOutcome, "ErrDuplicateMember": recipes.ErrDuplicateMember,
	}
	for name, err := range all {
		if err == nil {
			t.Fatalf("%s is nil", name)
		}
		if !strings.HasPrefix(err.Error(), "zkrecipes: ") {
			t.Errorf("%s reads %q, not \"zkrecipes: ...\"", name, err)
		}
		wrapped := fmt.Errorf("zkrecipes: mutex /a: %w", fmt.Errorf("outer: %w", err))
		for other, target := range all {
			want := name == other || (name == "ErrClientClosed" && other == "ErrClosed")
			if got := errors.Is(wrapped, target); got != want {
				t.Errorf("errors.Is(wrapped %s, %s) = %v, want %v", name, other, got, want)
			}
		}
	}
}
