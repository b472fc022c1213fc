package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// CAS configures a compare-and-set loop (CompareAndSet).
type CAS struct {
	// Create makes the loop create the node (its missing parents as
	// containers) when it does not exist, with what the update returns
	// for an absent node. Without it an absent node ends the loop with an
	// error wrapping zk.ErrNoNode.
	Create bool
	// Tries bounds the attempts; 0 leaves the bound to the retry policy.
	Tries int
	// Retry, when set, makes the pauses between attempts that lost to
	// another writer (and the bound on them) its own instead of the
	// client's retry policy's. Requests that fail for a connection reason
	// are still retried under the client's policy.
	Retry func() backoff.BackOff
	// Exact makes a write whose reply was lost, and whose outcome the
	// next read cannot tell, end the loop with an error wrapping
	// ErrUnknownOutcome, instead of taking a node at the next version
	// holding the same bytes as the write (another writer's identical
	// write, as two increments of one value are) as applied and anything
	// else as not applied (when it may have been applied and overwritten
	// since). A counter needs it: without it, a lost reply may count an
	// increment twice or not at all.
	Exact bool
}

// CASResult is the outcome of a compare-and-set loop.
type CASResult struct {
	Prev       []byte   // the data the winning update was computed from
	PrevExists bool     // false when the winning write created the node
	Data       []byte   // what was written
	Stat       *zk.Stat // the node after the write
	Tries      int      // attempts made, the winning one included
}

// CompareAndSet is the compare-and-set loop on the node at path (a server
// path): it reads the node's data and version, computes the new data
// with update (prev is nil and exists false for an absent node), and
// writes it on condition that the version is still the one it read (or,
// for an absent node with CAS.Create, that nobody created it meanwhile).
// When another writer came first (zk.ErrBadVersion, zk.ErrNodeExists, the
// node deleted meanwhile) it reads again and tries again, after a pause
// of the client's retry policy, until a write succeeds, the policy or
// CAS.Tries gives up (ErrConflict), update returns an error (returned as
// it is), or ctx ends (an error wrapping ctx.Err()). Requests that fail
// for a connection reason are retried under the retry policy.
//
// A write whose reply is lost may have been applied: the loop reads
// again, and takes a node at the next version holding exactly the bytes
// it wrote as its own write. (Another writer that computed the same bytes
// from the same version could be mistaken for it; exactly one of the two
// writes was applied then.)
func (c *Client) CompareAndSet(ctx context.Context, path string, cas CAS, update func(prev []byte, exists bool) ([]byte, error)) (CASResult, error) {
	if err := c.Check(); err != nil {
		return CASResult{}, err
	}
	if ctx == nil {
		return CASResult{}, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	if update == nil {
		return CASResult{}, fmt.Errorf("%w: nil update", zkerr.ErrInvalidArgument)
	}
	if err := zkpath.ValidatePath(path); err != nil {
		return CASResult{}, err
	}
	l := &casLoop{c: c, ctx: ctx, path: path, cas: cas, conflicts: c.Backoff()}
	if cas.Retry != nil { // a policy of its own (one returning nil: no retries)
		l.conflicts = newBackoff(cas.Retry)
	}
	for tries := 1; ; tries++ {
		prev, st, exists, err := l.casRead(ctx, path)
		if err != nil {
			return CASResult{}, l.readError(err)
		}
		if l.pending != nil {
			if res, done, err := l.afterLostReply(exists, prev, st, tries); done {
				return res, err
			}
		}
		if !exists && !cas.Create {
			return CASResult{}, l.casError(ctx, path, zk.ErrNoNode)
		}
		if !exists {
			prev = nil
		}
		data, err := update(prev, exists)
		if err != nil {
			return CASResult{}, err
		}
		res := CASResult{Prev: prev, PrevExists: exists, Data: data, Tries: tries}
		var wst *zk.Stat
		if exists {
			wst, err = c.Set(ctx, path, data, st.Version)
		} else {
			wst, err = l.casCreate(ctx, path, data)
		}
		switch {
		case err == nil:
			res.Stat = wst
			return res, nil
		case ctx.Err() != nil:
			return CASResult{}, l.abandoned(err)
		case zkerr.IsRetryable(err):
			// Applied or not: the next read tells.
			if serr := l.lostReply(exists, prev, data, st); serr != nil {
				return CASResult{}, serr
			}
			continue
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists),
			errors.Is(err, zk.ErrNoNode) && cas.Create:
			// Another writer came first: read again.
		default:
			return CASResult{}, l.casError(ctx, path, err)
		}
		if perr := l.conflictPause(tries, err); perr != nil {
			return CASResult{}, perr
		}
	}
}

// casLoop is the state of a compare-and-set loop (CompareAndSet) across
// its attempts.
type casLoop struct {
	c         *Client
	ctx       context.Context
	path      string
	cas       CAS
	conflicts Backoff   // the pauses after another writer came first
	pending   *casWrite // a write whose reply was lost
}

// casRead reads the node at path (exists false when there is none),
// retrying connection problems under the retry policy.
func (l *casLoop) casRead(ctx context.Context, path string) (prev []byte, st *zk.Stat, exists bool, _ error) {
	c := l.c
	exists = true
	err := c.Retry(ctx, func() error {
		var err error
		prev, st, err = c.Get(ctx, path)
		if errors.Is(err, zk.ErrNoNode) {
			exists, err = false, nil
		}
		return err
	})
	return prev, st, exists, err
}

// readError is the loop's error when its read failed with err.
func (l *casLoop) readError(err error) error {
	if l.pending != nil && l.cas.Exact {
		return l.casError(l.ctx, l.path, fmt.Errorf("%w: reading after a lost reply: %w", zkerr.ErrUnknownOutcome, err))
	}
	return l.casError(l.ctx, l.path, err)
}

// afterLostReply judges the pending write by the node as read on try
// tries: it ends the loop (done) with the write taken as applied, or with
// an Exact loop's unknown outcome; otherwise it drops the pending write
// and the loop goes on.
func (l *casLoop) afterLostReply(exists bool, prev []byte, st *zk.Stat, tries int) (_ CASResult, done bool, _ error) {
	pending := l.pending
	switch pending.judge(exists, prev, st) {
	case casLanded:
		if !l.cas.Exact {
			return CASResult{Prev: pending.prev, PrevExists: pending.prevExists, Data: pending.data, Stat: st, Tries: tries - 1}, true, nil
		}
		return CASResult{}, true, l.unknownOutcome(l.path, st)
	case casUnknown:
		if l.cas.Exact {
			return CASResult{}, true, l.unknownOutcome(l.path, st)
		}
	}
	l.pending = nil
	return CASResult{}, false, nil
}

// abandoned is the loop's error when ctx ended and the write failed with
// err: an Exact loop cannot tell whether a write in flight was applied.
func (l *casLoop) abandoned(err error) error {
	if l.cas.Exact && !definite(err) {
		return zkerr.Namedf("compare-and-set "+l.c.Namespace().Strip(l.path), "%w: %w: ctx ended with a write in flight", l.ctx.Err(), zkerr.ErrUnknownOutcome)
	}
	return l.casError(l.ctx, l.path, err)
}

// lostReply keeps the write of data, computed from prev (the node read
// as st), as pending, for the next read to judge, and pauses before it.
func (l *casLoop) lostReply(exists bool, prev, data []byte, st *zk.Stat) error {
	l.pending = &casWrite{prevExists: exists, prev: prev, data: data}
	if exists {
		l.pending.version, l.pending.czxid = st.Version, st.Czxid
	}
	l.c.met.countRetry()
	if serr := sleep(l.ctx, retryPause, l.c.closeCh); serr != nil {
		if l.cas.Exact {
			serr = fmt.Errorf("%w: a write's reply was lost: %w", zkerr.ErrUnknownOutcome, serr)
		}
		return l.casError(l.ctx, l.path, serr)
	}
	return nil
}

// conflictPause is one conflict's pause, after try tries lost to another
// writer with err: it returns ErrConflict when CAS.Tries or the conflicts
// policy gives up.
func (l *casLoop) conflictPause(tries int, err error) error {
	if l.cas.Tries > 0 && tries >= l.cas.Tries {
		return zkerr.Namedf("compare-and-set "+l.c.Namespace().Strip(l.path), "other writers came first on all %d tries: %w: %w", tries, zkerr.ErrConflict, err)
	}
	d, ok := l.conflicts.next()
	if !ok {
		return zkerr.Namedf("compare-and-set "+l.c.Namespace().Strip(l.path), "other writers came first on all %d tries: %w: %w", tries, zkerr.ErrConflict, err)
	}
	if serr := sleep(l.ctx, d, l.c.closeCh); serr != nil {
		return l.casError(l.ctx, l.path, serr)
	}
	return nil
}

// casCreate creates path with data, its missing parents as containers,
// and returns its stat.
func (l *casLoop) casCreate(ctx context.Context, path string, data []byte) (*zk.Stat, error) {
	c := l.c
	if _, err := c.CreateWithParents(ctx, path, data, 0); err != nil {
		return nil, err
	}
	// The create reply has no stat: read it (a node at version 0 holding
	// our bytes, unless another writer came since).
	_, st, err := c.Get(ctx, path)
	if err != nil {
		return &zk.Stat{}, nil //nolint:nilerr // the write succeeded; the stat is a courtesy
	}
	return st, nil
}

// casWrite is a write whose reply was lost.
type casWrite struct {
	prevExists bool
	prev, data []byte
	version    int32 // the version it was conditioned on (prevExists)
	czxid      int64 // the node's czxid then (prevExists)
}

// casOutcome is what the node read after a lost reply tells of the write.
type casOutcome int

const (
	casNotApplied casOutcome = iota // the write was certainly not applied
	casLanded                       // the next version holds the write's bytes: applied, or an identical write was
	casUnknown                      // the node moved on: the write may be among the versions since
)

// judge tells what the node as read says of w. A node deleted since is
// taken as w not applied.
func (w *casWrite) judge(exists bool, data []byte, st *zk.Stat) casOutcome {
	switch {
	case !exists:
		return casNotApplied
	case w.prevExists && st.Czxid != w.czxid:
		return casUnknown // deleted and made again since
	}
	next := int32(0) // the version w's write made
	if w.prevExists {
		if st.Version == w.version {
			return casNotApplied // a write conditioned on it would have moved it
		}
		next = w.version + 1
	}
	switch {
	case st.Version != next:
		return casUnknown
	case bytes.Equal(data, w.data):
		return casLanded
	}
	return casNotApplied // the one write since is another's
}

// definite reports whether a write's error says it was not applied.
func definite(err error) bool {
	return errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode)
}

// unknownOutcome is the error of an Exact loop whose lost write's fate
// the node does not tell.
func (l *casLoop) unknownOutcome(path string, st *zk.Stat) error {
	c := l.c
	return zkerr.Namedf("compare-and-set "+c.Namespace().Strip(path),
		"%w: the reply to a write was lost, and the node (now at version %d) does not tell whether it was applied", zkerr.ErrUnknownOutcome, st.Version)
}

func (l *casLoop) casError(ctx context.Context, path string, err error) error {
	c := l.c
	what := "compare-and-set " + c.Namespace().Strip(path)
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return zkerr.Namedf(what, "%w (last error: %w)", cerr, err)
	}
	return zkerr.Namedf(what, "%w", zkerr.Explain(err))
}
