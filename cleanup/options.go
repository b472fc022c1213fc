package cleanup

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Mode says how long a Reaper keeps an explicitly added path (WithPaths,
// AddPath), as Curator's Reaper.Mode does. Children of watched parents are
// tracked while they exist and found again when they reappear.
type Mode int

const (
	// ReapForever keeps checking a path after it was deleted: it may come
	// back (Curator's REAP_INDEFINITELY).
	ReapForever Mode = iota
	// ReapUntilDelete stops checking a path once the Reaper deleted it
	// (REAP_UNTIL_DELETE).
	ReapUntilDelete
	// ReapUntilGone stops checking a path once it is gone, whoever deleted
	// it (REAP_UNTIL_GONE).
	ReapUntilGone
)

// Defaults, as Curator's Reaper: a node is deleted once it was seen empty
// on 3 consecutive checks spread over 5 minutes.
const (
	DefaultThreshold = 5 * time.Minute
	DefaultChecks    = 3
)

// Option configures a Reaper.
type Option func(*options) error

type options struct {
	paths     []string
	parents   []string
	depth     int
	threshold time.Duration
	checks    int
	mode      Mode
	latchPath string
	latchID   string
	rate      int
	log       *slog.Logger
}

// WithPaths adds nodes to reap themselves once they stay empty.
func WithPaths(paths ...string) Option {
	return func(o *options) error { o.paths = append(o.paths, paths...); return nil }
}

// WithParents watches every child of each parent (Curator's old
// ChildReaper): children that stay empty are deleted, the parents are
// kept. New children are found through a children watch.
func WithParents(parents ...string) Option {
	return func(o *options) error { o.parents = append(o.parents, parents...); return nil }
}

// WithDepth reaps the descendants of the parents down to depth levels
// (default 1: the children). Depth 2 covers semaphores under a parent
// (<parent>/<key>/locks and <parent>/<key>/leases, then <parent>/<key>
// once they are gone).
func WithDepth(depth int) Option {
	return func(o *options) error {
		if depth < 1 {
			return fmt.Errorf("%w: depth %d", recipes.ErrInvalidArgument, depth)
		}
		o.depth = depth
		return nil
	}
}

// WithThreshold sets the reaping threshold (default 5 minutes): nodes are
// checked every threshold/checks, and one seen empty and unchanged at
// checks consecutive checks is deleted, as Curator's Reaper does; it has
// then been empty for at least (checks-1)/checks of the threshold.
func WithThreshold(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: threshold %v", recipes.ErrInvalidArgument, d)
		}
		o.threshold = d
		return nil
	}
}

// WithChecks sets how many consecutive checks, threshold/checks apart,
// must see a node empty and unchanged before it is deleted (default 3).
func WithChecks(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("%w: %d checks", recipes.ErrInvalidArgument, n)
		}
		o.checks = n
		return nil
	}
}

// WithMode sets the mode for explicitly added paths (default ReapForever).
func WithMode(m Mode) Option {
	return func(o *options) error {
		if m < ReapForever || m > ReapUntilGone {
			return fmt.Errorf("%w: mode %d", recipes.ErrInvalidArgument, m)
		}
		o.mode = m
		return nil
	}
}

// WithLeaderElection makes the reaper take part in a leader election at
// latchPath (an election.Latch, with participant id) and reap only while
// it leads, so that one reaper of a fleet works at a time.
func WithLeaderElection(latchPath, id string) Option {
	return func(o *options) error {
		if err := recipes.ValidatePath(latchPath); err != nil {
			return err
		}
		o.latchPath, o.latchID = latchPath, id
		return nil
	}
}

// WithRateLimit allows at most perSecond deletes a second (0, the
// default: no limit).
func WithRateLimit(perSecond int) Option {
	return func(o *options) error {
		if perSecond < 0 {
			return fmt.Errorf("%w: rate %d", recipes.ErrInvalidArgument, perSecond)
		}
		o.rate = perSecond
		return nil
	}
}

// WithLogger sets the reaper's logger (default: the client's).
func WithLogger(l *slog.Logger) Option {
	return recipeargs.Logger(l, func(o *options, l *slog.Logger) { o.log = l })
}
