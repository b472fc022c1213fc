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
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
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
	payloads  [][]byte          // every payload set, the latest last
	foreign   int64             // the other session that holds our node (0: none)
	overwrite []byte            // a payload not ours found on our node
	others    map[string][]byte // the members the cache's events brought, by id
	loaded    bool              // the cache's Initialized has been applied to others
	ready     chan struct{}     // closed once loaded
	members   []Member          // membersLocked's last answer, while valid
	memoOK    bool              // members is valid: no change since
	stale     bool              // a state was not posted: nobody listened (postLocked)
	life      lifecycle.State
	removes   []func()
	state     *notify.Current[GroupState]
}

// NewGroupMember returns the member id of the group at membershipPath with
// payload (nil: the local IP address, as Curator). It does not touch
// ZooKeeper.
func NewGroupMember(c *recipes.Client, membershipPath, id string, payload []byte) (*GroupMember, error) {
	full, err := recipeargs.Path(c, membershipPath, "a membership path")
	if err != nil {
		return nil, err
	}
	if id == "" || strings.Contains(id, "/") || zkpath.ValidatePath("/"+id) != nil {
		return nil, fmt.Errorf("%w: member id %q", recipes.ErrInvalidArgument, id)
	}
	if payload == nil {
		payload = []byte(recipeargs.LocalIP())
	}
	e := (*engine.Client)(c)
	memberPath := e.Namespace().Strip(zkpath.JoinPath(full, id))
	n, err := NewPersistentNode(c, memberPath, Ephemeral, payload)
	if err != nil {
		return nil, err
	}
	kids, err := cache.NewChildrenCache(c, membershipPath)
	if err != nil {
		return nil, err
	}
	return &GroupMember{c: c, e: e, path: membershipPath, id: id, node: n, kids: kids,
		payloads: [][]byte{append([]byte(nil), payload...)},
		others:   map[string][]byte{}, ready: make(chan struct{}),
		state: notify.NewCurrent(sameGroupState)}, nil
}

// ID returns this member's id.
func (g *GroupMember) ID() string {
	if !g.made() {
		return ""
	}
	return g.id
}

// Path returns the membership path as given.
func (g *GroupMember) Path() string {
	if !g.made() {
		return ""
	}
	return g.path
}

func (g *GroupMember) made() bool { return g != nil && g.node != nil }

func notMadeGroup() error { return zkerr.NotMade("GroupMember", "NewGroupMember") }

func (g *GroupMember) what() string { return "group member " + zkpath.JoinPath(g.path, g.id) }

// Start makes this member's node in the background and starts the cache
// of the group; WaitReady waits for both. A failed Start leaves
// nothing. ErrAlreadyStarted when called again, ErrClosed after Close.
func (g *GroupMember) Start(ctx context.Context) error {
	if !g.made() {
		return notMadeGroup()
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	g.mu.Lock() // held until the listeners are in: Close reads them under mu
	defer g.mu.Unlock()
	if err := g.life.Start(g.what()); err != nil {
		return err
	}
	if err := g.kids.Start(ctx); err != nil {
		g.life.Abort()
		return zkerr.Namedf(g.what(), "start: %w", err)
	}
	if err := g.node.Start(ctx); err != nil {
		_ = g.kids.Close(context.Background())
		g.life.Abort()
		return err
	}
	g.removes = append(g.removes,
		g.node.Listen(func(ev Event) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.foreign = 0
			if ev.Foreign {
				g.foreign = ev.Session
			}
			g.postLocked()
		}),
		g.kids.Listen(g.apply),
	)
	return nil
}

// apply applies one event of the group's cache to the members,
// and posts the state once the first load is in; readiness
// (WaitReady) follows the members, not the cache, so that
// every read after it sees the load.
func (g *GroupMember) apply(ev cache.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.memoOK = false
	switch ev.Type {
	case cache.NodeCreated, cache.NodeChanged:
		_, id := zkpath.SplitPath(ev.Path)
		g.others[id] = ev.New.Data
		if ev.New.Path == g.node.Path() {
			g.checkPayloadLocked(ev.New.Data)
		}
	case cache.NodeDeleted:
		_, id := zkpath.SplitPath(ev.Path)
		delete(g.others, id)
	case cache.Initialized:
		g.loaded = true
		defer close(g.ready)
	}
	g.postLocked()
}

// checkPayloadLocked records whether our node holds a payload we did
// not set.
func (g *GroupMember) checkPayloadLocked(data []byte) {
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

// postLocked tells the listeners the current state, once the first
// load is in (a state they heard already is not posted again). With no
// listener it only marks the state stale (listenLocked posts it before
// the next listener comes): a state is a sorted copy of every member, and
// making one per event cost each of n members O(n log n) per join, so
// that n members joining cost O(n³ log n) in all (Curator's GroupMember
// has no listener and builds its list only when asked, as
// CurrentMembers does here).
func (g *GroupMember) postLocked() {
	if g.life.Closed() || !g.loaded {
		return
	}
	if !g.state.Listened() {
		g.stale = true
		return
	}
	g.stale = false
	g.state.Set(g.stateLocked())
}

// listenLocked brings the posted state up to date before a listener
// comes, under mu, so that it hears the current state first.
func (g *GroupMember) listenLocked() {
	if g.stale && g.loaded && !g.life.Closed() {
		g.stale = false
		g.state.Set(g.stateLocked())
	}
}

// sameGroupState reports whether two states are the same.
func sameGroupState(a, b GroupState) bool {
	if (a.Duplicate == nil) != (b.Duplicate == nil) ||
		(a.Duplicate != nil && a.Duplicate.Error() != b.Duplicate.Error()) {
		return false
	}
	return slices.EqualFunc(a.Members, b.Members, func(x, y Member) bool {
		return x.ID == y.ID && bytes.Equal(x.Payload, y.Payload)
	})
}

func (g *GroupMember) stateLocked() GroupState {
	return GroupState{Members: slices.Clone(g.membersLocked()), Duplicate: g.duplicateLocked()}
}

func (g *GroupMember) duplicateLocked() error {
	switch {
	case g.foreign != 0:
		return zkerr.Namedf(g.what(), "%w: another session (0x%x) holds the node; waiting for it to go", recipes.ErrDuplicateMember, g.foreign)
	case g.overwrite != nil:
		return zkerr.Namedf(g.what(), "%w: another member wrote its payload over ours (%q)", recipes.ErrDuplicateMember, g.overwrite)
	}
	return nil
}

// membersLocked returns the members, sorted by id: built once after
// each change (a cache event or a payload set) and shared by the calls
// until the next (callers copy it before handing it out).
func (g *GroupMember) membersLocked() []Member {
	if g.memoOK {
		return g.members
	}
	ms := make([]Member, 0, len(g.others)+1)
	ms = append(ms, Member{ID: g.id, Payload: g.payloads[len(g.payloads)-1]})
	for id, data := range g.others {
		if id != g.id {
			ms = append(ms, Member{ID: id, Payload: data})
		}
	}
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	g.members, g.memoOK = ms, true
	return ms
}

// WaitReady waits until this member's node exists and the
// group's members are loaded: every CurrentMembers after it lists the
// members that were there when the load read them. Errors as
// PersistentNode.WaitReady.
func (g *GroupMember) WaitReady(ctx context.Context) error {
	if !g.made() {
		return notMadeGroup()
	}
	if err := g.node.WaitReady(ctx); err != nil {
		return zkerr.Named(g.what(), err) // the member's name, not its node's
	}
	if err := g.kids.WaitReady(ctx); err != nil {
		return zkerr.Namedf(g.what(), "%w", err)
	}
	select { // the cache is loaded; its listener applies the load next
	case <-g.ready:
		return nil
	case <-ctx.Done():
		return zkerr.Namedf(g.what(), "waiting for the members: %w", ctx.Err())
	}
}

// CurrentMembers returns the group's members as the cache has them, sorted
// by id, this member always included with its latest payload (as
// Curator's getCurrentMembers). The list is built once per change the
// cache reports (an event its listeners hear) and copied for each call:
// a call costs a copy, not a walk of the cache.
func (g *GroupMember) CurrentMembers() []Member {
	if !g.made() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.membersLocked())
}

// Err returns nil, or an error wrapping recipes.ErrDuplicateMember while
// another member uses this member's id.
func (g *GroupMember) Err() error {
	if !g.made() {
		return notMadeGroup()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.duplicateLocked()
}

// SetData sets this member's payload (see PersistentNode.SetData: it
// works before the node is first made).
func (g *GroupMember) SetData(ctx context.Context, payload []byte) error {
	if !g.made() {
		return notMadeGroup()
	}
	g.mu.Lock()
	g.payloads = append(g.payloads, append([]byte(nil), payload...))
	g.memoOK = false
	if len(g.payloads) > 8 {
		g.payloads = g.payloads[len(g.payloads)-8:]
	}
	g.postLocked()
	g.mu.Unlock()
	return g.node.SetData(ctx, payload)
}

// Listen calls fn with the current state (once the members are loaded),
// then with each change of the members or of the duplicate report, in
// order, never the same state twice in a row, on a goroutine of its own.
// The returned function removes the listener.
func (g *GroupMember) Listen(fn func(GroupState)) (remove func()) {
	if !g.made() {
		return func() {}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listenLocked()
	return g.state.Listen(fn)
}

// Subscribe is Listen for a channel: the current state (once the
// members are loaded), then each change, in order, queued without bound
// while the reader is slow. The returned function, or Close, closes the
// channel.
func (g *GroupMember) Subscribe() (<-chan GroupState, func()) {
	if !g.made() {
		ch := make(chan GroupState)
		close(ch)
		return ch, func() {}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listenLocked()
	return g.state.Subscribe()
}

// Close deletes this member's node (guaranteed delete) and stops the
// cache. It is safe to call more than once.
func (g *GroupMember) Close(ctx context.Context) error {
	if !g.made() {
		return notMadeGroup()
	}
	first, wasStarted := g.life.Close()
	if !first {
		return nil
	}
	g.mu.Lock()
	removes := g.removes
	g.mu.Unlock()
	for _, r := range removes {
		r()
	}
	err := g.node.Close(ctx)
	if cerr := g.kids.Close(ctx); err == nil && wasStarted {
		err = cerr
	}
	g.state.Close()
	return err
}
