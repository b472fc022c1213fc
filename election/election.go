// Package election is leader election on ZooKeeper, compatible with
// Curator's LeaderLatch and LeaderSelector, plus Observe for processes that
// follow an election without taking part.
//
// A Latch keeps a node _c_<uuid>-latch-<seq> (data: the participant's id)
// under the latch path for as long as it runs, and leads while its node is
// first AND the node's ephemeralOwner is the client's current session
// (Curator's CURATOR-696 double leader came from skipping the second
// check). A Selector queues on a mutex at its path (_c_<uuid>-lock-<seq>,
// data: the id), runs the caller's function while it holds it, and
// releases it when the function returns, requeueing if asked to.
//
// A Latch that resigns (Resign) steps down and leaves the election but
// stays usable: Start joins again with a new node at the back of the
// queue, as etcd's Resign and Campaign do. Close is final.
//
// # Terms
//
// Each stretch of leadership is a Term. Its Done channel closes when the
// leadership may be gone: at SUSPENDED under the client's Standard error
// policy, at LOST under both policies (the client declares LOST one
// session timeout after it last heard from the server, which is when the
// server may expire the session and let another participant lead), when
// the node is deleted, and at Close. So a term ends for the old leader
// before the server can let a new one begin: never two leaders. Its Token
// is the leader node's czxid, which grows from one leader to the next
// (fencing); two terms of one participant on the same node, around a
// connection blip during which nobody else could lead, share it.
//
// # What it does not guarantee
//
// That a leader's code knows at once when its term ended: a leader paused
// past its session timeout resumes while another leads, and learns so only
// when its Client runs again. Guard what a leader does with the term's
// Token or Fenced. A crashed leader is replaced one session timeout after
// the crash. Observe and CurrentLeader report what ZooKeeper showed a
// moment ago: the leader may have changed since.
//
// # ACLs
//
// A latch's node, a selector's lock node and the missing parents get the
// Client's ACLs (recipes.WithACLProvider). A client they leave out gets an
// error wrapping recipes.ErrNoAuth from Latch.Start at once; a Selector
// logs the refusal at error level and stops queueing until Requeue;
// Observe logs it and reads again only at the next reconnection. See
// docs/security.md.
package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Node names, as Curator names them.
const (
	LatchName    = "latch-" // LeaderLatch nodes: _c_<uuid>-latch-<seq>
	SelectorName = "lock-"  // LeaderSelector nodes (a mutex): _c_<uuid>-lock-<seq>
)

// Term is one stretch of leadership, with its own Done, Token, Fenced,
// Node and Release: a recipes.Hold.
type Term struct {
	hold  termHold // the latch node's, or the selector's mutex lease
	end   func(ctx context.Context) error
	id    string
	start time.Time
}

// termHold is what a term keeps of its hold; Release is the term's own.
type termHold interface {
	Node() string
	Done() <-chan struct{}
	IsLost() bool
	Token(ctx context.Context) (recipes.FenceToken, error)
	Fenced(ctx context.Context, ops ...recipes.Op) ([]zk.MultiResponse, error)
}

// Release ends the term, from any goroutine. For a Latch's term it is
// Latch.Resign: the node is deleted (so another participant leads at
// once) and the latch stays usable; a later Start joins again. For a
// Selector's term it cancels the LeadFunc's ctx (Interrupt) and waits,
// within ctx, for the LeadFunc to return and the lock to be released
// (called from the LeadFunc itself, it only cancels). A term already over
// returns an error wrapping recipes.ErrNotHeld.
func (t *Term) Release(ctx context.Context) error {
	if t == nil || t.hold == nil || t.end == nil {
		return fmt.Errorf("%w: Term not returned by a Latch or Selector", recipes.ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	return t.end(ctx)
}

// Node returns the path of the term's node (inside the client's
// namespace, as every path the library returns).
func (t *Term) Node() string { return t.h().Node() }

// Done returns a channel that closes when the term may be gone: on LOST,
// on SUSPENDED under the client's Standard error policy, when the client
// closes, and when the term ends.
func (t *Term) Done() <-chan struct{} { return t.h().Done() }

// IsLost reports whether the session that owned the term was lost (or
// the client closed) since it began.
func (t *Term) IsLost() bool { return t.h().IsLost() }

// Token returns the term's fencing token (recipes.FenceToken): the
// creation zxid (czxid) of its node. Tokens strictly increase across successive holders of the same
// path, even when the parent was deleted and recreated in between. The
// first call reads the node (one request); later calls return the cached
// value.
func (t *Term) Token(ctx context.Context) (recipes.FenceToken, error) { return t.h().Token(ctx) }

// Fenced runs ops (recipes.CreateOp, SetOp, DeleteOp, CheckOp, on recipe
// paths: the client's namespace is applied) as one transaction
// together with a check that the term's node still exists, so the server
// refuses the writes of a holder that lost it: the error then wraps
// ErrFenced, as it does once the term ends. The responses returned are for ops
// only. A connection error is returned as it is (recipes.IsRetryable): the
// transaction may or may not have been applied.
func (t *Term) Fenced(ctx context.Context, ops ...recipes.Op) ([]zk.MultiResponse, error) {
	return t.h().Fenced(ctx, ops...)
}

// h returns the term's hold; a zero Term's is a nil one, whose methods
// refuse with ErrInvalidArgument.
func (t *Term) h() termHold {
	if t == nil || t.hold == nil {
		return nodeHold{}
	}
	return t.hold
}

// nodeHold is the latch's hold on its node as a recipes.Hold, with the
// node's czxid as the token.
type nodeHold struct{ *engine.Hold }

func (h nodeHold) Token(ctx context.Context) (recipes.FenceToken, error) {
	z, err := h.Hold.Token(ctx)
	return recipes.FenceToken{Czxid: z}, err
}

func (h nodeHold) Fenced(ctx context.Context, ops ...recipes.Op) ([]zk.MultiResponse, error) {
	return h.Hold.Fenced(ctx, recipeargs.Ops(ops)...)
}

func newTerm(h termHold, id string, end func(ctx context.Context) error) *Term {
	return &Term{hold: h, end: end, id: id, start: time.Now()}
}

// ID returns the id of the participant that leads in this term.
func (t *Term) ID() string { return t.id }

// Started returns when the term began, by this process's clock.
func (t *Term) Started() time.Time { return t.start }

// anyDriver orders latch and selector nodes alike, by the text after the
// last lock name.
var anyDriver = &contend.Driver{Names: []string{LatchName, SelectorName}}

// Participants returns the election's nodes at path (a latch's or a
// selector's), in queue order, with their ids; the first leads. Nodes
// that vanish while they are read are left out.
func Participants(ctx context.Context, c *recipes.Client, path string) ([]recipes.Participant, error) {
	full, err := recipeargs.ReadPath(ctx, c, path)
	if err != nil {
		return nil, err
	}
	return participants(ctx, c, full)
}

func participants(ctx context.Context, c *recipes.Client, full string) ([]recipes.Participant, error) {
	ms, err := (*engine.Client)(c).ReadQueue(ctx, full, anyDriver, nil)
	if err != nil {
		return nil, zkerr.Namedf("election "+(*engine.Client)(c).Namespace().Strip(full), "participants: %w", err)
	}
	return recipeargs.Participants(ms, nil), nil
}

// CurrentLeader reads the leader of the election at path once: the first
// node's id and node, with Holds set. It returns the zero Participant
// and recipes.ErrNoLeader when there is none. (The leader may have changed by the
// time it returns; Observe follows the changes.)
func CurrentLeader(ctx context.Context, c *recipes.Client, path string) (recipes.Participant, error) {
	full, err := recipeargs.ReadPath(ctx, c, path)
	if err != nil {
		return recipes.Participant{}, err
	}
	l, err := readLeader(ctx, c, full, nil)
	if err != nil {
		return recipes.Participant{}, err
	}
	if l.Node == "" {
		return recipes.Participant{}, zkerr.Namedf("election "+path, "%w", recipes.ErrNoLeader)
	}
	return l, nil
}

// readLeader reads the first node's id (the zero Participant when there
// is none). With w (Observe's follow) it also leaves one watch, through
// the engine's watched read: on the leader node's data (a join behind it
// wakes nobody; a leader gone meanwhile keeps none, the list is read
// again), or, when there is none, on the children, or on the path's
// creation when it does not exist. With w nil it reads plainly.
func readLeader(ctx context.Context, c *recipes.Client, full string, w *engine.Watches) (recipes.Participant, error) {
	e := (*engine.Client)(c)
	for {
		if err := ctx.Err(); err != nil {
			return recipes.Participant{}, err
		}
		kids, _, err := e.Children(ctx, full)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if w == nil {
				return recipes.Participant{}, nil
			}
			ok, _, err := e.ReadExists(ctx, full, w)
			if err != nil {
				return recipes.Participant{}, err
			}
			if ok {
				continue // created meanwhile
			}
			return recipes.Participant{}, nil
		case err != nil:
			return recipes.Participant{}, err
		case len(kids) == 0:
			if w == nil {
				return recipes.Participant{}, nil
			}
			v, err := e.ReadChildren(ctx, full, w, false)
			if err != nil {
				return recipes.Participant{}, err
			}
			if !v.Exists || len(v.Children) > 0 {
				continue // gone, or joined meanwhile (the children watch fires, harmlessly)
			}
			return recipes.Participant{}, nil
		}
		first := contend.SortContenders(kids, anyDriver)[0]
		p := zkpath.JoinPath(full, first.Name)
		v, err := e.ReadData(ctx, p, w, false)
		if err != nil {
			return recipes.Participant{}, err
		}
		if !v.Exists {
			continue // gone meanwhile: look again
		}
		return recipes.Participant{ID: string(v.Data), Node: e.Namespace().Strip(p), Holds: true}, nil
	}
}
