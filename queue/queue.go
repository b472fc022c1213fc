package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Consumer consumes the items of a Queue (Curator's QueueConsumer). Consume
// is called for one queue node at a time, on the queue's goroutine, in
// queue order; its ctx ends when the queue is closed.
//
// In lock-safety mode, returning nil deletes the item (through Ack, unless
// Consume called Ack itself) and returning an error puts it back (or
// deletes it, under ErrorDelete). In normal mode the item was deleted
// before Consume was called; an error is logged and the item is gone.
type Consumer interface {
	Consume(ctx context.Context, m *Message) error
}

// ConsumerFunc makes a function a Consumer.
type ConsumerFunc func(ctx context.Context, m *Message) error

// Consume calls f.
func (f ConsumerFunc) Consume(ctx context.Context, m *Message) error { return f(ctx, m) }

// ErrorMode says what lock-safety mode does with an item whose Consume
// returned an error (Curator's ErrorMode).
type ErrorMode uint8

const (
	// ErrorRequeue puts the item back at the tail of the queue, under its
	// own name (without its sequence): Curator's default.
	ErrorRequeue ErrorMode = iota
	// ErrorDelete deletes the item.
	ErrorDelete
)

// Option configures a queue (New, NewIDQueue, NewPriorityQueue,
// NewDelayQueue) or a Sharder: each With… says which it configures, and
// the other refuses it (recipes.ErrInvalidArgument); WithLogger
// configures both.
type Option func(*options) error

type options struct {
	recipe    string // "Queue" or "Sharder", set by the constructor
	consumer  Consumer
	lockPath  string
	errorMode ErrorMode
	maxItems  int
	log       *slog.Logger

	unreadable UnreadableFunc

	sharder // a Sharder's (sharder.go)
}

// only refuses an option given to a recipe other than recipe.
func only(o *options, option, recipe string) error {
	if o.recipe != recipe {
		return fmt.Errorf("%w: %s is an option of %s, not of %s", recipes.ErrInvalidArgument, option, recipe, o.recipe)
	}
	return nil
}

// option is recipe's option name: it sets with set when ok, and refuses
// otherwise (recipes.ErrInvalidArgument, saying what is wrong); every
// other recipe refuses it too.
func option(recipe, name string, ok bool, wrong string, set func(*options)) Option {
	return func(o *options) error {
		if err := only(o, name, recipe); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", recipes.ErrInvalidArgument, wrong)
		}
		set(o)
		return nil
	}
}

// WithLogger sets the logger of the consumer's work (a corrupt item kept
// or handed over, a consumer failed, a lock lost), or of a Sharder's
// checks; the Client's by default.
func WithLogger(l *slog.Logger) Option {
	return recipeargs.Logger(l, func(o *options, l *slog.Logger) { o.log = l })
}

// WithConsumer makes the queue consume: Start starts a goroutine that
// hands every item to c, until Close. Without it the queue only produces.
func WithConsumer(c Consumer) Option {
	f, isFunc := c.(ConsumerFunc)
	return option("Queue", "WithConsumer", c != nil && !(isFunc && f == nil), "nil Consumer", func(o *options) { o.consumer = c })
}

// WithLockPath turns on lock-safety mode (Curator's lockPath): before it
// consumes an item the consumer creates the ephemeral node
// lockPath/<item>, and it deletes the item only after Consume returned.
// Delivery is then at least once (see the package doc). lockPath must
// differ from the queue's path; Curator consumers of the same queue must
// use the same one.
func WithLockPath(lockPath string) Option {
	return func(o *options) error {
		if err := only(o, "WithLockPath", "Queue"); err != nil {
			return err
		}
		if lockPath == "" {
			return fmt.Errorf("%w: empty lock path", recipes.ErrInvalidPath)
		}
		o.lockPath = lockPath
		return nil
	}
}

// WithErrorMode sets what lock-safety mode does with an item whose
// Consume failed: ErrorRequeue (the default) or ErrorDelete.
func WithErrorMode(m ErrorMode) Option {
	return option("Queue", "WithErrorMode", m == ErrorRequeue || m == ErrorDelete, fmt.Sprintf("error mode %d", m), func(o *options) { o.errorMode = m })
}

// WithMaxItems bounds the queue (Curator's maxItems): a Put waits while
// the queue holds max nodes or more, until one goes or its ctx ends. The
// bound is checked before each put, not in the same transaction, so
// producers that put at once can pass it by a few (as in Curator).
func WithMaxItems(max int) Option {
	return option("Queue", "WithMaxItems", max >= 1, fmt.Sprintf("max items %d", max), func(o *options) { o.maxItems = max })
}

// core is what every queue of the DistributedQueue family shares.
type core struct {
	c        *recipes.Client
	e        *engine.Client
	kind     kind
	path     string // as given
	full     string // on the server
	lockPath string // as given; "" in normal mode
	lockFull string
	opts     options
	log      *slog.Logger

	life       lifecycle.State // and its goroutine, the consumer
	unreadable atomic.Int64    // corrupt items met
}

func newCore(c *recipes.Client, k kind, path string, opts []Option) (*core, error) {
	full, err := recipeargs.Path(c, path, "a queue path")
	if err != nil {
		return nil, err
	}
	q := &core{c: c, e: (*engine.Client)(c), kind: k, path: path, full: full}
	q.opts.recipe = "Queue"
	for _, o := range opts {
		if o == nil {
			return nil, zkerr.Namedf(q.what(), "%w: nil Option", recipes.ErrInvalidArgument)
		}
		if err := o(&q.opts); err != nil {
			return nil, zkerr.Named(q.what(), err)
		}
	}
	if q.opts.lockPath != "" {
		lf, err := recipeargs.Path(c, q.opts.lockPath, "a queue lock path")
		if err != nil {
			return nil, zkerr.Named(q.what(), err)
		}
		if lf == full || strings.HasPrefix(lf, full+"/") {
			return nil, zkerr.Namedf(q.what(), "%w: the lock path %s must not be the queue's path or under it", recipes.ErrInvalidPath, q.opts.lockPath)
		}
		q.lockPath, q.lockFull = q.opts.lockPath, lf
	}
	q.log = q.opts.log
	if q.log == nil {
		q.log = q.e.Logger()
	}
	return q, nil
}

func (q *core) what() string { return q.kind.String() + " " + q.path }

func (q *core) check(ctx context.Context) error {
	if q == nil || q.c == nil {
		return q.notMade()
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	return zkerr.Named(q.what(), q.e.Check())
}

// start makes the queue's directory and lock directory (persistent, their
// parents containers, as Curator's start does) and, with a consumer,
// starts consuming.
func (q *core) start(ctx context.Context) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	if err := q.life.Start(q.what()); err != nil {
		return err
	}
	for _, dir := range []string{q.full, q.lockFull} {
		if dir == "" {
			continue
		}
		if err := q.ensureDir(ctx, dir); err != nil {
			q.life.Abort()
			return zkerr.Namedf(q.what(), "start: %w", err)
		}
	}
	if q.opts.consumer == nil {
		return nil
	}
	return q.life.Go(ctx, q.what(), q.run) // refused if Close came while the directories were made
}

// ensureDir makes dir (the queue's or its lock directory) with Curator's
// default data, the local IP address, as Curator's start makes it.
func (q *core) ensureDir(ctx context.Context, dir string) error {
	err := q.e.Retry(ctx, func() error {
		_, err := q.e.CreateWithParents(ctx, dir, []byte(recipeargs.LocalIP()), 0)
		return err
	})
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// close stops consuming: the consumer's ctx ends, and close waits for the
// item in hand to be finished (until ctx ends).
func (q *core) close(ctx context.Context) error {
	if q == nil || q.c == nil {
		return q.notMade()
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	if first, _ := q.life.Close(); !first {
		return nil
	}
	return q.life.Stop(ctx, q.what())
}

// put creates one item node named name<seq> holding items.
func (q *core) put(ctx context.Context, name string, items [][]byte) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	if len(items) == 0 {
		return zkerr.Namedf(q.what(), "put: %w: no items", recipes.ErrInvalidArgument)
	}
	if q.opts.maxItems > 0 {
		if err := q.waitRoom(ctx); err != nil {
			return zkerr.Namedf(q.what(), "put: %w", err)
		}
	}
	data := Encode(items)
	err := q.e.Retry(ctx, func() error {
		_, err := q.e.CreateWithParents(ctx, zkpath.JoinPath(q.full, name), data, zk.FlagSequence)
		return err
	})
	if err != nil {
		return zkerr.Namedf(q.what(), "put: %w", err)
	}
	return nil
}

// waitRoom waits until the queue holds fewer than maxItems nodes.
func (q *core) waitRoom(ctx context.Context) error {
	_, err := q.e.Await(ctx, engine.Wait{What: q.path + " to have room"}, func(engine.Snapshot, engine.Wake) (engine.Look, error) {
		kids, _, ch, err := q.e.ChildrenW(ctx, q.full)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return engine.Look{Done: true}, nil
		case err != nil:
			return engine.Look{}, err
		case len(sortItems(kids, ItemPrefix, kindPlain)) < q.opts.maxItems:
			return engine.Look{Done: true}, nil
		}
		return engine.Look{Watch: ch}, nil
	})
	return err
}

// length counts the items now.
func (q *core) length(ctx context.Context) (int, error) {
	if err := q.check(ctx); err != nil {
		return 0, err
	}
	return countItems(ctx, q.e, q.full, ItemPrefix, q.what())
}

// countItems counts the items named prefix...<seq> in the directory full
// now: 0 when it does not exist. what names the queue in the error.
func countItems(ctx context.Context, e *engine.Client, full, prefix, what string) (int, error) {
	var n int
	err := e.Retry(ctx, func() error {
		kids, _, err := e.Children(ctx, full)
		if errors.Is(err, zk.ErrNoNode) {
			n = 0
			return nil
		}
		n = len(sortItems(kids, prefix, kindPlain))
		return err
	})
	if err != nil {
		return 0, zkerr.Namedf(what, "len: %w", err)
	}
	return n, nil
}
