package cleanup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/engine"
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
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", recipes.ErrInvalidArgument)
		}
		o.log = l
		return nil
	}
}

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
	started bool
	closed  bool

	checked, reaped, notEmpty, active atomic.Uint64

	latch     *election.Latch
	cancel    context.CancelFunc
	done      chan struct{}
	followers sync.WaitGroup // one goroutine a followed parent
	next      time.Time      // rate limit: earliest next delete
}

type entry struct {
	explicit bool  // WithPaths/AddPath (deleted itself, kept per Mode)
	depth    int   // below its parent; 0 for explicit paths
	empties  int   // consecutive empty checks
	cversion int32 // children version at the last empty check
	czxid    int64
}

type parent struct {
	depth  int                // 0 for the parents given
	stop   context.CancelFunc // ends its follow; nil until it is followed
	listed time.Time          // its last list (its follow's goroutine only)
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
		nodes: map[string]*entry{}, parents: map[string]*parent{}, done: make(chan struct{})}
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
		return fmt.Errorf("%w: Reaper not made by New", recipes.ErrInvalidArgument)
	}
	if err := engine.Of(r.c).Check(); err != nil {
		return err
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
	if r.closed {
		return fmt.Errorf("cleanup: reaper: %w", recipes.ErrClosed)
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
		return fmt.Errorf("%w: Reaper not made by New", recipes.ErrInvalidArgument)
	}
	if err := engine.Of(r.c).Check(); err != nil {
		return err
	}
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return fmt.Errorf("cleanup: reaper: %w", recipes.ErrClosed)
	case r.started:
		r.mu.Unlock()
		return fmt.Errorf("%w: reaper already started", recipes.ErrInvalidArgument)
	}
	r.started = true
	rctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.mu.Unlock()
	if r.latch != nil {
		if err := r.latch.Start(ctx); err != nil {
			cancel()
			close(r.done)
			return fmt.Errorf("cleanup: reaper election: %w", err)
		}
	}
	go r.run(rctx)
	return nil
}

// Stats returns the reaper's counters.
func (r *Reaper) Stats() Stats {
	return Stats{Checked: r.checked.Load(), Reaped: r.reaped.Load(),
		SkippedNotEmpty: r.notEmpty.Load(), SkippedActive: r.active.Load()}
}

// Tracked returns how many nodes the reaper is watching.
func (r *Reaper) Tracked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.nodes)
}

// Close stops the reaper (and leaves the election). It is safe to call
// more than once.
func (r *Reaper) Close(ctx context.Context) error {
	if r == nil || r.c == nil {
		return fmt.Errorf("%w: Reaper not made by New", recipes.ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	started := r.started
	r.mu.Unlock()
	if started {
		r.cancel()
		select {
		case <-r.done:
		case <-ctx.Done():
			return fmt.Errorf("cleanup: reaper: close: %w", ctx.Err())
		}
	}
	if r.latch != nil {
		return r.latch.Close(ctx)
	}
	return nil
}

func (r *Reaper) run(ctx context.Context) {
	defer close(r.done)
	defer r.followers.Wait()
	t := time.NewTicker(r.interval)
	defer t.Stop()
	following := false
	for {
		if r.latch == nil || r.latch.HasLeadership() {
			if !following {
				following = true
				r.followAll(ctx)
			}
			r.checkAll(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// followAll starts following the children of every parent: from then on
// (until Close) the candidates under them are tracked as they come.
func (r *Reaper) followAll(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, pp := range r.parents {
		if pp.stop == nil {
			r.followLocked(ctx, p, pp)
		}
	}
}

// followLocked follows pp's children, on a goroutine of its own, until
// ctx ends or pp is forgotten (dropParentLocked); r.mu is held.
func (r *Reaper) followLocked(ctx context.Context, p string, pp *parent) {
	fctx, stop := context.WithCancel(ctx)
	pp.stop = stop
	r.followers.Add(1)
	go func() {
		defer r.followers.Done()
		defer stop()
		_ = engine.Of(r.c).Follow(fctx, "reaper: children of "+p, func(fctx context.Context, w *engine.Watches) error {
			return r.list(ctx, fctx, p, pp, w)
		})
	}()
}

// list reads p's children into the candidates, leaving a children watch
// under "c:" (none when one is still armed: they have not changed). A
// parent given that is missing is watched, under "e:", until it is
// created; a parent found below it that is gone is forgotten.
//
// A parent is listed at most once an interval: new candidates wait for
// the next check anyway, and a busy parent (one whose children the
// reaper itself is deleting, thousands of them) would otherwise be listed
// again after every delete. ctx is the reaper's (for the parents found
// below p), fctx p's follow's.
func (r *Reaper) list(ctx, fctx context.Context, p string, pp *parent, w *engine.Watches) error {
	ck, ek := "c:"+p, "e:"+p
	for !w.Armed(ck) {
		if !sleep(fctx, time.Until(pp.listed.Add(r.interval))) {
			return nil
		}
		pp.listed = time.Now()
		kids, _, ch, err := engine.Of(r.c).ChildrenW(ctx, p)
		if err == nil {
			w.Add(ck, ch)
			r.found(ctx, p, pp, kids)
			return nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if pp.depth > 0 {
			r.mu.Lock()
			if r.parents[p] == pp {
				r.dropParentLocked(p)
			}
			r.mu.Unlock()
			return nil
		}
		if w.Armed(ek) {
			return nil
		}
		ok, _, ch, err := engine.Of(r.c).ExistsW(ctx, p)
		if err != nil {
			return err
		}
		w.Add(ek, ch)
		if !ok {
			return nil
		}
		// created meanwhile: list it
	}
	return nil
}

// found tracks kids, the children of p (unless p was forgotten
// meanwhile), and follows those that are parents in turn.
func (r *Reaper) found(ctx context.Context, p string, pp *parent, kids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parents[p] != pp {
		return
	}
	for _, k := range kids {
		cp := engine.JoinPath(p, k)
		if r.nodes[cp] == nil {
			r.nodes[cp] = &entry{depth: pp.depth + 1}
		}
		if pp.depth+1 < r.opts.depth && r.parents[cp] == nil {
			np := &parent{depth: pp.depth + 1}
			r.parents[cp] = np
			r.followLocked(ctx, cp, np)
		}
	}
}

// dropParentLocked stops following p's children; r.mu is held.
func (r *Reaper) dropParentLocked(p string) {
	if pp := r.parents[p]; pp != nil && pp.stop != nil {
		pp.stop()
	}
	delete(r.parents, p)
}

// checkAll checks every candidate, up to checkers at a time.
func (r *Reaper) checkAll(ctx context.Context) {
	r.mu.Lock()
	paths := make([]string, 0, len(r.nodes))
	for p := range r.nodes {
		paths = append(paths, p)
	}
	r.mu.Unlock()
	const checkers = 16
	sem := make(chan struct{}, checkers)
	var wg sync.WaitGroup
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(p string) {
			defer wg.Done()
			defer func() { <-sem }()
			r.check(ctx, p)
		}(p)
	}
	wg.Wait()
}

// check looks at one candidate and deletes it once it has been seen empty
// and unchanged on enough consecutive checks.
func (r *Reaper) check(ctx context.Context, p string) {
	ok, st, err := engine.Of(r.c).Exists(ctx, p)
	r.checked.Add(1)
	if err != nil {
		return // tried again at the next round
	}
	r.mu.Lock()
	e := r.nodes[p]
	if e == nil {
		r.mu.Unlock()
		return
	}
	if !ok {
		r.forgetLocked(p, e, false)
		r.mu.Unlock()
		return
	}
	if st.NumChildren > 0 || !isPersistent(st) {
		e.empties = 0 // busy, or not ours to delete (ephemeral, container, TTL)
		r.mu.Unlock()
		return
	}
	if e.empties > 0 && (st.Cversion != e.cversion || st.Czxid != e.czxid) {
		e.empties = 0 // children came and went since the last check: in use
		r.active.Add(1)
	}
	e.empties++
	e.cversion, e.czxid = st.Cversion, st.Czxid
	due := e.empties >= r.opts.checks
	r.mu.Unlock()
	if !due || r.latch != nil && !r.latch.HasLeadership() {
		return
	}
	if !r.pace(ctx) {
		return
	}
	// The server refuses to delete a node that has children, and the
	// version makes it refuse a node deleted and made again meanwhile.
	err = engine.Of(r.c).Delete(ctx, p, st.Version)
	switch {
	case err == nil:
		r.reaped.Add(1)
		r.log.Debug("zkrecipes: reaper: deleted an empty node", "path", p)
		r.mu.Lock()
		if e := r.nodes[p]; e != nil {
			r.forgetLocked(p, e, true)
		}
		r.mu.Unlock()
	case errors.Is(err, zk.ErrNotEmpty):
		r.notEmpty.Add(1)
		r.mu.Lock()
		e.empties = 0
		r.mu.Unlock()
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
		r.mu.Lock()
		e.empties = 0
		r.mu.Unlock()
	default:
		r.log.Warn("zkrecipes: reaper: delete failed", "path", p, "err", err)
	}
}

// forgetLocked drops a candidate that is gone (deleted by us when
// byUs), as its mode says; r.mu is held.
func (r *Reaper) forgetLocked(p string, e *entry, byUs bool) {
	e.empties = 0
	if e.explicit {
		switch r.opts.mode {
		case ReapForever:
			return
		case ReapUntilDelete:
			if !byUs {
				return
			}
		}
	}
	delete(r.nodes, p)
	r.dropParentLocked(p)
}

// pace waits for the rate limit; false when ctx ended.
func (r *Reaper) pace(ctx context.Context) bool {
	if r.opts.rate == 0 {
		return true
	}
	r.mu.Lock()
	now := time.Now()
	at := r.next
	if at.Before(now) {
		at = now
	}
	r.next = at.Add(time.Second / time.Duration(r.opts.rate))
	r.mu.Unlock()
	return sleep(ctx, time.Until(at))
}

// sleep waits for d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
