package nodes

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Member is one member of a group.
type Member struct {
	// ID is the member's id: its node's name.
	ID string
	// Payload is its node's data.
	Payload []byte
}

// GroupState is what a GroupMember's listeners hear.
type GroupState struct {
	// Members is the group's current members, sorted by id, this member
	// always included.
	Members []Member
	// Duplicate is nil, or an error wrapping recipes.ErrDuplicateMember
	// while another member uses this member's id.
	Duplicate error
}

// GroupMember is Curator's GroupMember: this process is a member of the
// group at membershipPath, as the ephemeral node membershipPath/<id> whose
// data is the payload (Curator's default: the local IP address), kept by a
// PersistentNode; the current members are read from a children cache of
// membershipPath (package cache), this member always included.
//
// A second member with the same id is detected and reported (Err,
// GroupState.Duplicate), not silently overwritten: Curator's second
// member writes its payload over the first's. A member that finds its id
// held by another session's node waits for that node to go (then its own
// is made) and reports the duplicate meanwhile; a member whose node gets
// another payload than any it set reports it. A duplicate that writes the
// very payload this member wrote cannot be told apart.
//
// A GroupMember is safe for concurrent use.
type GroupMember struct {
	c    *recipes.Client
	e    *engine.Client
	path string // membership path, as given
	id   string
	node *PersistentNode
	kids *cache.Cache

	mu        sync.Mutex
	payloads  [][]byte // every payload set, the latest last
	foreign   int64    // the other session that holds our node (0: none)
	overwrite []byte   // a payload not ours found on our node
	members   []Member // membersLocked's last answer, while valid
	memoOK    bool     // members is valid: no cache event or payload since
	started   bool
	closed    bool
	removes   []func()
	listeners engine.Listeners[GroupState]
}

// NewGroupMember returns the member id of the group at membershipPath with
// payload (nil: the local IP address, as Curator). It does not touch
// ZooKeeper.
func NewGroupMember(c *recipes.Client, membershipPath, id string, payload []byte) (*GroupMember, error) {
	full, err := recipeargs.Path(c, membershipPath, "a membership path")
	if err != nil {
		return nil, err
	}
	if id == "" || strings.Contains(id, "/") || engine.ValidatePath("/"+id) != nil {
		return nil, fmt.Errorf("%w: member id %q", recipes.ErrInvalidArgument, id)
	}
	if payload == nil {
		payload = []byte(engine.LocalIP())
	}
	e := engine.Of(c)
	memberPath := e.StripNamespace(engine.JoinPath(full, id))
	n, err := NewPersistentNode(c, memberPath, Ephemeral, payload)
	if err != nil {
		return nil, err
	}
	kids, err := cache.NewChildrenCache(c, membershipPath)
	if err != nil {
		return nil, err
	}
	return &GroupMember{c: c, e: e, path: membershipPath, id: id, node: n, kids: kids,
		payloads: [][]byte{append([]byte(nil), payload...)}}, nil
}

// ID returns this member's id.
func (g *GroupMember) ID() string { return g.id }

// Path returns the membership path as given.
func (g *GroupMember) Path() string { return g.path }

func (g *GroupMember) what() string { return "group member " + engine.JoinPath(g.path, g.id) }

// Start makes this member's node in the background and starts the cache
// of the group; WaitForInitialCreate waits for both. A failed Start leaves
// nothing. ErrAlreadyStarted when called again, ErrClosed after Close.
func (g *GroupMember) Start(ctx context.Context) error {
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return engine.Namedf(g.what(), "start: %w", recipes.ErrClosed)
	case g.started:
		return engine.Namedf(g.what(), "start: %w", recipes.ErrAlreadyStarted)
	}
	if err := g.kids.Start(ctx); err != nil {
		return engine.Namedf(g.what(), "start: %w", err)
	}
	if err := g.node.Start(ctx); err != nil {
		_ = g.kids.Close(context.Background())
		return err
	}
	g.started = true
	g.removes = append(g.removes,
		g.node.Listen(func(ev Event) {
			g.mu.Lock()
			g.foreign = 0
			if ev.Foreign {
				g.foreign = ev.Session
			}
			g.mu.Unlock()
			g.post()
		}),
		g.kids.Listen(func(ev cache.Event) {
			g.mu.Lock()
			g.memoOK = false
			g.mu.Unlock()
			if ev.New != nil && ev.New.Path == g.node.Path() {
				g.checkPayload(ev.New.Data)
			}
			select {
			case <-g.kids.Initialized():
				g.post()
			default: // the first state goes out with Initialized
			}
		}),
	)
	return nil
}

// checkPayload records whether our node holds a payload we did not set.
func (g *GroupMember) checkPayload(data []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.foreign != 0 {
		return
	}
	for _, p := range g.payloads {
		if bytes.Equal(p, data) {
			g.overwrite = nil
			return
		}
	}
	g.overwrite = append([]byte(nil), data...)
}

// post tells the listeners the current state.
func (g *GroupMember) post() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.listeners.Post(g.stateLocked())
}

func (g *GroupMember) stateLocked() GroupState {
	return GroupState{Members: slices.Clone(g.membersLocked()), Duplicate: g.duplicateLocked()}
}

func (g *GroupMember) duplicateLocked() error {
	switch {
	case g.foreign != 0:
		return engine.Namedf(g.what(), "%w: another session (0x%x) holds the node; waiting for it to go", recipes.ErrDuplicateMember, g.foreign)
	case g.overwrite != nil:
		return engine.Namedf(g.what(), "%w: another member wrote its payload over ours (%q)", recipes.ErrDuplicateMember, g.overwrite)
	}
	return nil
}

// membersLocked returns the members, sorted by id: built from the cache
// once after each of its events (or a payload set) and shared by the
// calls until the next (callers copy it before handing it out).
func (g *GroupMember) membersLocked() []Member {
	if g.memoOK {
		return g.members
	}
	ms := make([]Member, 0, g.kids.Size()+1)
	self := false
	for _, n := range g.kids.Snapshot() {
		_, id := engine.SplitPath(n.Path)
		if id == g.id {
			self = true
			n.Data = g.payloads[len(g.payloads)-1]
		}
		ms = append(ms, Member{ID: id, Payload: n.Data})
	}
	if !self {
		ms = append(ms, Member{ID: g.id, Payload: g.payloads[len(g.payloads)-1]})
	}
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	g.members, g.memoOK = ms, true
	return ms
}

// WaitForInitialCreate waits until this member's node exists and the
// group's cache is loaded. Errors as PersistentNode.WaitForInitialCreate.
func (g *GroupMember) WaitForInitialCreate(ctx context.Context) error {
	if _, err := g.node.WaitForInitialCreate(ctx); err != nil {
		return err
	}
	if err := g.kids.WaitInitialized(ctx); err != nil {
		return engine.Namedf(g.what(), "%w", err)
	}
	return nil
}

// CurrentMembers returns the group's members as the cache has them, sorted
// by id, this member always included with its latest payload (as
// Curator's getCurrentMembers). The list is built once per change the
// cache reports (an event its listeners hear) and copied for each call:
// a call costs a copy, not a walk of the cache.
func (g *GroupMember) CurrentMembers() []Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.membersLocked())
}

// Err returns nil, or an error wrapping recipes.ErrDuplicateMember while
// another member uses this member's id.
func (g *GroupMember) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.duplicateLocked()
}

// SetPayload sets this member's payload (see PersistentNode.SetData: it
// works before the node is first made).
func (g *GroupMember) SetPayload(ctx context.Context, payload []byte) error {
	g.mu.Lock()
	g.payloads = append(g.payloads, append([]byte(nil), payload...))
	g.memoOK = false
	if len(g.payloads) > 8 {
		g.payloads = g.payloads[len(g.payloads)-8:]
	}
	g.mu.Unlock()
	return g.node.SetData(ctx, payload)
}

// Listen calls fn with the current state (once the cache is loaded), then
// with each change of the members or of the duplicate report, in order, on
// a goroutine of its own. The returned function removes the listener.
func (g *GroupMember) Listen(fn func(GroupState)) (remove func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.kids.Initialized():
		return g.listeners.ListenFirst(fn, g.stateLocked())
	default:
		return g.listeners.Listen(fn)
	}
}

// Close deletes this member's node (guaranteed delete) and stops the
// cache. It is safe to call more than once.
func (g *GroupMember) Close(ctx context.Context) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	removes := g.removes
	g.mu.Unlock()
	for _, r := range removes {
		r()
	}
	err := g.node.Close(ctx)
	if cerr := g.kids.Close(ctx); err == nil && g.started {
		err = cerr
	}
	g.listeners.Close()
	return err
}
