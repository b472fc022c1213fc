package cleanup

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Stats counts a reaper's work.
type Stats struct {
	Checked         uint64 // node checks (one exists request each)
	Reaped          uint64 // nodes deleted
	SkippedNotEmpty uint64 // deletes the server refused because a child had appeared
	SkippedActive   uint64 // empty nodes whose children changed between two checks
}

// Reaper deletes lock parents that stay empty. See the package doc.
type Reaper struct {
	c        *recipes.Client
	opts     options
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	nodes   map[string]*entry // candidates, by server path
	parents map[string]*parent
	life    lifecycle.State // and its goroutine, run

	checked, reaped, notEmpty, active atomic.Uint64

	latch     *election.Latch
	follower  *engine.Follower // every parent's children, once following (r.mu)
	followers sync.WaitGroup   // the follower's goroutine
	next      time.Time        // rate limit: earliest next delete
}

type entry struct {
	explicit bool  // WithPaths/AddPath (deleted itself, kept per Mode)
	depth    int   // below its parent; 0 for explicit paths
	empties  int   // consecutive empty checks
	cversion int32 // children version at the last empty check
	czxid    int64
}

type parent struct {
	depth    int       // 0 for the parents given
	followed bool      // a read of the reaper's Follower (r.mu)
	listed   time.Time // its last list (the Follower's goroutine only)
}

// New returns a reaper; Start starts it. Paths are given as users see
// them (the client's namespace applies).
func New(c *recipes.Client, opts ...Option) (*Reaper, error) {
	if err := recipeargs.Client(c); err != nil {
		return nil, err
	}
	o := options{depth: 1, threshold: DefaultThreshold, checks: DefaultChecks}
	if err := recipeargs.Options(&o, opts); err != nil {
		return nil, err
	}
	if o.log == nil {
		o.log = c.Logger()
	}
	r := &Reaper{c: c, opts: o, log: o.log, interval: o.threshold / time.Duration(o.checks),
		nodes: map[string]*entry{}, parents: map[string]*parent{}}
	if r.interval <= 0 {
		r.interval = time.Millisecond
	}
	for _, p := range o.paths {
		if err := r.AddPath(p); err != nil {
			return nil, err
		}
	}
	for _, p := range o.parents {
		full, err := c.FullPath(p)
		if err != nil {
			return nil, err
		}
		r.parents[full] = &parent{}
	}
	if o.latchPath != "" {
		l, err := election.NewLatch(c, o.latchPath, o.latchID)
		if err != nil {
			return nil, err
		}
		r.latch = l
	}
	return r, nil
}

// AddPath adds a node to reap itself once it stays empty (Curator's
// Reaper.addPath).
func (r *Reaper) AddPath(path string) error {
	if r == nil || r.c == nil {
		return notMade()
	}
	if err := (*engine.Client)(r.c).Check(); err != nil {
		return zkerr.Named("reaper", err)
	}
	full, err := r.c.FullPath(path)
	if err != nil {
		return err
	}
	if full == "/" {
		return fmt.Errorf("%w: the root cannot be reaped", recipes.ErrInvalidPath)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.life.Closed() {
		return zkerr.Namedf("reaper", "%w", recipes.ErrClosed)
	}
	if e := r.nodes[full]; e == nil {
		r.nodes[full] = &entry{explicit: true}
	} else {
		e.explicit = true
	}
	return nil
}

// Start begins checking (and, with WithLeaderElection, joins the
// election); ctx bounds only the start. The reaper runs until Close.
func (r *Reaper) Start(ctx context.Context) error {
	if r == nil || r.c == nil {
		return notMade()
	}
	if err := (*engine.Client)(r.c).Check(); err != nil {
		return zkerr.Named("reaper", err)
	}
	if err := r.life.Start("reaper"); err != nil {
		return err
	}
	if r.latch != nil {
		if err := r.latch.Start(ctx); err != nil {
			// Nothing is left behind (the latch's failed Start leaves no
			// node): the Reaper may be started again.
			r.life.Abort()
			return zkerr.Namedf("reaper", "election: %w", err)
		}
	}
	// Refused when a Close came meanwhile: that Close closes the latch.
	return r.life.Go(context.Background(), "reaper", r.run)
}

func notMade() error { return zkerr.NotMade("Reaper", "New") }

// Stats returns the reaper's counters.
func (r *Reaper) Stats() Stats {
	if r == nil {
		return Stats{}
	}
	return Stats{Checked: r.checked.Load(), Reaped: r.reaped.Load(),
		SkippedNotEmpty: r.notEmpty.Load(), SkippedActive: r.active.Load()}
}

// Tracked returns how many nodes the reaper is watching.
func (r *Reaper) Tracked() int {
	if r == nil || r.c == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.nodes)
}

// Close stops the reaper (and leaves the election). It is safe to call
// more than once.
func (r *Reaper) Close(ctx context.Context) error {
	if r == nil || r.c == nil {
		return notMade()
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	if first, _ := r.life.Close(); !first {
		return nil
	}
	if err := r.life.Stop(ctx, "reaper"); err != nil {
		return err
	}
	if r.latch != nil {
		return r.latch.Close(ctx)
	}
	return nil
}
