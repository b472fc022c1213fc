package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// ShardPrefix begins the name of each queue of a Sharder: queue-<uuid>,
// as Curator's QueueSharder names them.
const ShardPrefix = "queue-"

// Shard is a queue a Sharder manages: Queue, IDQueue, PriorityQueue and
// DelayQueue are Shards (Curator's QueueBase).
type Shard interface {
	Start(ctx context.Context) error
	Close(ctx context.Context) error
}

// Allocator makes the queue at path, one of a Sharder's shards, not yet
// started (Curator's QueueAllocator): queue.New with the options every
// shard shares, say.
type Allocator[Q Shard] func(c *recipes.Client, path string) (Q, error)

// sharder is a Sharder's options (Curator's QueueSharderPolicies).
type sharder struct {
	threshold int
	interval  time.Duration
	maxShards int
	id        string
}

// WithShardThreshold sets the number of items past which a shard is
// full: no longer preferred by Queue, and a reason for the leader to add
// a shard (Curator's newQueueThreshold; default 10,000).
func WithShardThreshold(n int) Option {
	return option("Sharder", "WithShardThreshold", n > 0, fmt.Sprintf("shard threshold %d", n), func(o *options) { o.threshold = n })
}

// WithShardCheckInterval sets how often the shards are counted
// (Curator's thresholdCheckMs; default 30 s).
func WithShardCheckInterval(d time.Duration) Option {
	return option("Sharder", "WithShardCheckInterval", d > 0, fmt.Sprintf("shard check interval %v", d), func(o *options) { o.interval = d })
}

// WithMaxShards sets the most shards the leader makes (Curator's
// maxQueues; default 10).
func WithMaxShards(n int) Option {
	return option("Sharder", "WithMaxShards", n > 0, fmt.Sprintf("max shards %d", n), func(o *options) { o.maxShards = n })
}

// WithSharderID sets the participant id of the sharder's leader latch
// (its node's data), not empty. The default is this host's IP address as
// text; Curator's sharder leaves it empty, which election.Latch refuses.
func WithSharderID(id string) Option {
	return option("Sharder", "WithSharderID", id != "", "empty sharder id", func(o *options) { o.id = id })
}

// Sharder is Curator's QueueSharder: one logical queue made of several
// queues under one path, for backlogs one queue cannot hold. Each
// sharder knows every shard (queue-<uuid> under the path), starts its
// own queue on each through the Allocator, and counts their items once
// an interval: a shard of at least the threshold is no longer preferred,
// one of at most half of it is again, and when one is at the threshold
// the leader of the sharders (an election.Latch at the leader path) adds
// a shard, up to the maximum. As in Curator that is at every count, so a
// full shard nobody drains brings the shards to the maximum, one
// interval apart. Queue returns a preferred shard at random, any shard
// when none is preferred.
//
// Order holds within a shard only: items put through a Sharder may be
// consumed out of order. Curator's QueueSharder processes share the
// paths: they and Go sharders see the same shards and elect one leader.
type Sharder[Q Shard] struct {
	c          *recipes.Client
	e          *engine.Client
	path, full string
	alloc      Allocator[Q]
	opts       options
	latch      *election.Latch

	life      lifecycle.State // and its goroutine, counting the shards
	mu        sync.Mutex
	shards    map[string]Q // by path, as the sharder's path is given
	preferred map[string]bool
}

// NewSharder returns a sharder of the queues under queuePath, with its
// leader latch at leaderPath (which must be elsewhere), making each
// shard's queue with alloc. It does not touch ZooKeeper until Start.
func NewSharder[Q Shard](c *recipes.Client, queuePath, leaderPath string, alloc Allocator[Q], opts ...Option) (*Sharder[Q], error) {
	full, err := recipeargs.Path(c, queuePath, "a sharder path")
	if err != nil {
		return nil, err
	}
	s := &Sharder[Q]{c: c, e: (*engine.Client)(c), path: queuePath, full: full, alloc: alloc, shards: map[string]Q{}, preferred: map[string]bool{},
		opts: options{recipe: "Sharder", sharder: sharder{threshold: 10000, interval: 30 * time.Second, maxShards: 10, id: recipeargs.LocalIP()}}}
	lfull, err := recipeargs.Path(c, leaderPath, "a sharder leader path")
	switch {
	case err != nil:
	case lfull == full || strings.HasPrefix(lfull, full+"/"):
		err = fmt.Errorf("%w: the leader path %s must not be the queues' path or under it", recipes.ErrInvalidPath, leaderPath)
	case alloc == nil:
		err = fmt.Errorf("%w: nil Allocator", recipes.ErrInvalidArgument)
	default:
		err = recipeargs.Options(&s.opts, opts)
	}
	if err == nil {
		s.latch, err = election.NewLatch(c, leaderPath, s.opts.id)
	}
	if err != nil {
		return nil, zkerr.Named(s.what(), err)
	}
	s.opts.log = cmp.Or(s.opts.log, s.e.Logger()) // WithLogger's, else the Client's
	return s, nil
}

func (s *Sharder[Q]) what() string { return "queue sharder " + s.path }

// Path returns the sharder's path as given to NewSharder.
func (s *Sharder[Q]) Path() string { return s.path }

// Start makes the sharder's path (a container, as Curator's start does),
// starts a queue on each shard there, or on a new one when there is none,
// joins the leader election and begins counting the shards in the
// background. When it returns, Queue has a shard to give. A failed Start
// closes what it started.
func (s *Sharder[Q]) Start(ctx context.Context) error {
	if s == nil || s.c == nil {
		return zkerr.NotMade("Sharder", "NewSharder")
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	if err := s.life.Start(s.what()); err != nil {
		return err
	}
	wctx := context.WithoutCancel(ctx)
	err := s.e.EnsureContainers(ctx, s.full)
	if err == nil {
		err = s.check(ctx, true)
	}
	if err == nil {
		err = s.latch.Start(ctx)
	}
	if err != nil {
		s.life.Abort()
		return errors.Join(zkerr.Namedf(s.what(), "start: %w", err), s.closeShards(wctx))
	}
	if err := s.life.Go(ctx, s.what(), s.run); err != nil { // Close came meanwhile, and may have missed what Start started
		return errors.Join(err, s.latch.Close(wctx), s.closeShards(wctx))
	}
	return nil
}

// addShard starts a queue on the shard name unless this sharder has one;
// a new queue is preferred (Curator's addNewQueueIfNeeded). Starting the
// queue makes its directory.
func (s *Sharder[Q]) addShard(ctx context.Context, name string) error {
	p := zkpath.JoinPath(s.path, name)
	s.mu.Lock()
	_, ok := s.shards[p]
	s.mu.Unlock()
	if ok {
		return nil
	}
	q, err := s.alloc(s.c, p)
	if err != nil {
		return fmt.Errorf("allocating the queue %s: %w", p, err)
	}
	if err := q.Start(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.shards[p], s.preferred[p] = q, true
	s.mu.Unlock()
	return nil
}

// run counts the shards once an interval, and at once after a change of
// the connection's state (through the core's wait, so not while
// disconnected), until Close.
func (s *Sharder[Q]) run(ctx context.Context) {
	_, _ = s.e.Await(ctx, engine.Wait{What: s.path}, func(_ engine.Snapshot, w engine.Wake) (engine.Look, error) {
		if w.At || w.State { // not the first look: Start has just read the shards
			if err := s.check(ctx, false); err != nil && ctx.Err() == nil {
				s.opts.log.Error("zkrecipes: queue sharder: checking the shards against the threshold", "path", s.path, "err", err)
			}
		}
		return engine.Look{At: time.Now().Add(s.opts.interval)}, nil
	})
}

// check is Curator's checkThreshold and, at Start, its getInitialQueues:
// it starts a queue on each shard this sharder has none on (on a new
// shard at Start when there is none); then, but not at Start, it updates
// the preferred shards and, when one is full and this sharder leads,
// adds a shard if there are fewer than the maximum.
func (s *Sharder[Q]) check(ctx context.Context, atStart bool) error {
	var kids []string
	err := s.e.Retry(ctx, func() (err error) {
		kids, _, err = s.e.Children(ctx, s.full)
		return err
	})
	if err != nil {
		return err
	}
	if atStart && len(kids) == 0 {
		kids = []string{ShardPrefix + uuid.NewString()}
	}
	size := -1 // the items of a full shard
	for _, k := range kids {
		if err := s.addShard(ctx, k); err != nil {
			return err
		}
		if atStart {
			continue // every new queue is preferred until the first count
		}
		ok, st, err := s.e.Exists(ctx, zkpath.JoinPath(s.full, k))
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		p, n := zkpath.JoinPath(s.path, k), int(st.NumChildren)
		s.mu.Lock()
		switch {
		case n >= s.opts.threshold:
			size = n
			delete(s.preferred, p)
		case n <= s.opts.threshold/2:
			s.preferred[p] = true
		}
		s.mu.Unlock()
	}
	if size < 0 || !s.latch.HasLeadership() {
		return nil
	}
	if s.ShardCount() >= s.opts.maxShards {
		s.opts.log.Warn("zkrecipes: queue sharder: the most shards made; consider a larger WithMaxShards", "path", s.path, "max", s.opts.maxShards)
		return nil
	}
	s.opts.log.Info("zkrecipes: queue sharder: adding a shard, one is past the threshold", "path", s.path, "size", size, "threshold", s.opts.threshold)
	return s.addShard(ctx, ShardPrefix+uuid.NewString())
}

// Queue returns one of the shards' queues, at random among the preferred
// ones (those not past the threshold when last counted), or among all
// when none is preferred (Curator's getQueue). It returns an error
// wrapping recipes.ErrNotStarted before Start, recipes.ErrClosed after
// Close.
func (s *Sharder[Q]) Queue() (Q, error) {
	var zero Q
	if s == nil || s.c == nil {
		return zero, zkerr.NotMade("Sharder", "NewSharder")
	}
	if err := s.life.Running(s.what(), "queue"); err != nil {
		return zero, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := slices.Collect(maps.Keys(s.preferred))
	if len(keys) == 0 {
		keys = slices.Collect(maps.Keys(s.shards))
	}
	if len(keys) == 0 { // Start has not made the first yet
		return zero, zkerr.Namedf(s.what(), "queue: %w", recipes.ErrNotStarted)
	}
	return s.shards[keys[rand.IntN(len(keys))]], nil
}

// ShardCount returns the number of shards this sharder has a queue on
// (Curator's getShardQty).
func (s *Sharder[Q]) ShardCount() int { return len(s.ShardPaths()) }

// ShardPaths returns the paths of the shards this sharder has a queue
// on, sorted (Curator's getQueuePaths).
func (s *Sharder[Q]) ShardPaths() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.shards))
}

// HasLeadership reports whether this sharder leads: whether it adds the
// shards.
func (s *Sharder[Q]) HasLeadership() bool { return s != nil && s.latch.HasLeadership() }

// Close stops counting, leaves the election and closes every shard's
// queue (the shards stay in ZooKeeper, with their items). Later calls do
// nothing.
func (s *Sharder[Q]) Close(ctx context.Context) error {
	if s == nil || s.c == nil {
		return zkerr.NotMade("Sharder", "NewSharder")
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	if first, _ := s.life.Close(); !first {
		return nil
	}
	if err := s.life.Stop(ctx, s.what()); err != nil {
		return err
	}
	return errors.Join(zkerr.Named(s.what(), s.latch.Close(ctx)), s.closeShards(ctx))
}

// closeShards closes every shard's queue, and forgets them.
func (s *Sharder[Q]) closeShards(ctx context.Context) error {
	s.mu.Lock()
	shards := s.shards
	s.shards, s.preferred = map[string]Q{}, map[string]bool{}
	s.mu.Unlock()
	var errs []error
	for _, q := range shards {
		errs = append(errs, q.Close(ctx))
	}
	return zkerr.Named(s.what(), errors.Join(errs...))
}
