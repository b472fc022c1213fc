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
package election

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Node names, as Curator names them.
const (
	LatchName    = "latch-" // LeaderLatch nodes: _c_<uuid>-latch-<seq>
	SelectorName = "lock-"  // LeaderSelector nodes (a mutex): _c_<uuid>-lock-<seq>
)

// Sentinel errors.
var (
	// ErrNotStarted is returned by a Latch or Selector used before Start.
	ErrNotStarted = recipes.ErrNotStarted
	// ErrAlreadyStarted is returned by a second Start.
	ErrAlreadyStarted = recipes.ErrAlreadyStarted
	// ErrNoLeader is returned by Leader when nobody leads.
	ErrNoLeader = errors.New("zkrecipes: no leader")
	// ErrClosed is returned by a Latch or Selector after Close (and when
	// its client is closed: the message says which).
	ErrClosed = recipes.ErrClosed
)

// Term is one stretch of leadership, with its own Done, Token, Fenced
// and Node.
type Term struct {
	hold  recipes.Hold // the latch node's, or the selector's mutex lease
	id    string
	start time.Time
}

// Node returns the server path of the term's node.
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
func (t *Term) h() recipes.Hold {
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

func newTerm(h recipes.Hold, id string) *Term { return &Term{hold: h, id: id, start: time.Now()} }

// ID returns the id of the participant that leads in this term.
func (t *Term) ID() string { return t.id }

// Started returns when the term began, by this process's clock.
func (t *Term) Started() time.Time { return t.start }

// Participant is one node of an election: what Participants lists, what
// Latch.Leader, Selector.Leader and CurrentLeader return, and what Observe
// sends. The zero Participant (empty Node) stands for "nobody leads". A
// leader's fencing token is its Term's (Term.Token), not an observer's.
type Participant struct {
	ID       string // the participant's id (its node's data)
	Node     string // server path of its node
	IsLeader bool   // its node is first in the queue
}

// anyDriver orders latch and selector nodes alike, by the text after the
// last lock name.
var anyDriver = &engine.Driver{Names: []string{LatchName, SelectorName}}

// Participants returns the election's nodes at path (a latch's or a
// selector's), in queue order, with their ids; the first leads. Nodes
// that vanish while they are read are left out.
func Participants(ctx context.Context, c *recipes.Client, path string) ([]Participant, error) {
	full, err := recipeargs.ReadPath(ctx, c, path)
	if err != nil {
		return nil, err
	}
	return participants(ctx, c, full)
}

func participants(ctx context.Context, c *recipes.Client, full string) ([]Participant, error) {
	var kids []string
	err := c.Retry(ctx, func() error {
		var err error
		kids, _, err = engine.Of(c).Children(ctx, full)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, engine.Namedf("election "+full, "participants: %w", err)
	}
	out := make([]Participant, 0, len(kids))
	for _, k := range engine.SortContenders(kids, anyDriver) {
		p := engine.JoinPath(full, k.Name)
		var data []byte
		err := c.Retry(ctx, func() error {
			var err error
			data, _, err = engine.Of(c).Get(ctx, p)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, engine.Namedf("election "+full, "participants: %w", err)
		}
		out = append(out, Participant{ID: string(data), Node: p, IsLeader: len(out) == 0})
	}
	return out, nil
}

// CurrentLeader reads the leader of the election at path once: the first
// node's id and node, with IsLeader set. It returns the zero Participant
// and ErrNoLeader when there is none. (The leader may have changed by the
// time it returns; Observe follows the changes.)
func CurrentLeader(ctx context.Context, c *recipes.Client, path string) (Participant, error) {
	full, err := recipeargs.ReadPath(ctx, c, path)
	if err != nil {
		return Participant{}, err
	}
	l, err := readLeader(ctx, c, full, nil)
	if err != nil {
		return Participant{}, err
	}
	if l.Node == "" {
		return Participant{}, engine.Namedf("election "+path, "%w", ErrNoLeader)
	}
	return l, nil
}

// readLeader reads the first node's id (the zero Participant when there
// is none). With w (Observe's follow) it also leaves one watch, through
// the engine's watched read: on the leader node's data (a join behind it
// wakes nobody; a leader gone meanwhile keeps none, the list is read
// again), or, when there is none, on the children, or on the path's
// creation when it does not exist. With w nil it reads plainly.
func readLeader(ctx context.Context, c *recipes.Client, full string, w *engine.Watches) (Participant, error) {
	e := engine.Of(c)
	for {
		if err := ctx.Err(); err != nil {
			return Participant{}, err
		}
		kids, _, err := e.Children(ctx, full)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if w == nil {
				return Participant{}, nil
			}
			ok, _, err := e.ReadExists(ctx, full, w)
			if err != nil {
				return Participant{}, err
			}
			if ok {
				continue // created meanwhile
			}
			return Participant{}, nil
		case err != nil:
			return Participant{}, err
		case len(kids) == 0:
			if w == nil {
				return Participant{}, nil
			}
			v, err := e.ReadChildren(ctx, full, w, false)
			if err != nil {
				return Participant{}, err
			}
			if !v.Exists || len(v.Children) > 0 {
				continue // gone, or joined meanwhile (the children watch fires, harmlessly)
			}
			return Participant{}, nil
		}
		first := engine.SortContenders(kids, anyDriver)[0]
		p := engine.JoinPath(full, first.Name)
		v, err := e.ReadData(ctx, p, w, false)
		if err != nil {
			return Participant{}, err
		}
		if !v.Exists {
			continue // gone meanwhile: look again
		}
		return Participant{ID: string(v.Data), Node: p, IsLeader: true}, nil
	}
}
