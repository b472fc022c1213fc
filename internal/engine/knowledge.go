package engine

import (
	"sort"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// What the contender engine knows without asking the server. It holds only
// facts that stay true, which is what lets a waiter hand a lock on without
// listing the children again.
//
// Every fact belongs to one incarnation of a parent node: its path and its
// czxid. A container parent is deleted by the server once it is empty and
// made again by the next contender, and the new one starts its sequence
// numbers afresh, so a name or key seen under one incarnation says nothing
// about the next: Kazoo keeps one prefix per Lock object (its nodes are
// <32 hex>__lock__<seq>), so the same Kazoo object makes the same name again
// in the recreated parent. Within one incarnation a sequence number is
// never given twice, which every fact below relies on.
//
//   - Per Client and incarnation, a watermark (mark): every contender whose
//     key is below it is gone. It is raised only through the entry of the
//     incarnation it was learned in.
//   - Per Client and incarnation, the other names this Client saw go (by a
//     watch, or found missing): names that are not protected, such as
//     Kazoo's. The engine drops them from its snapshot through prune, so
//     they must be remembered while the contest lasts; they are never shared
//     with other Clients, which may talk to other ensembles where the same
//     path and czxid mean an unrelated node.
//   - Process-wide, per incarnation, the protected names seen to go, so that
//     the sessions of one process learn from each other's releases. Only a
//     name made by a protected create, ProtectedPrefix + <uuid> + "-" + rest
//     (see protectedUUID), is shared: each create draws a fresh random uuid,
//     so the name denotes one node on any ensemble and does not come back.
//     The engine records what it sees under its own incarnation only. A
//     delete made by this process (bury) does not know the parent's czxid;
//     it records the name under every incarnation of the path that has an
//     entry. That is right because the name is unique: no other incarnation
//     holds a node of that name, so the record is true, if useless, there.
//     A name that is not protected never enters this record.
//
// The shared record relies on one rule for protected creates: a uuid is
// not used again once a node made with it may have been seen to go. A
// create retried after a lost reply keeps its uuid, in Curator as here,
// which is fine within one session (a sequential create never gives a name
// twice in one incarnation, and the node of an earlier attempt lives as
// long as the session); a create retried in a new session, after the old
// session's node went, must draw a fresh uuid, or a non-sequential name (or
// a sequential one in a recreated parent) could come back.
//
// A fact recorded under an incarnation that has meanwhile been deleted (a
// watch set on a name the recreated parent holds again, say) is harmless:
// a contest can only use an incarnation that holds its own node, and a dead
// one holds none.
//
// Forgetting is always safe (it costs a children list), so all of it is
// bounded: an incarnation's entries live while a contest on it is under way
// (reference counts, dropped by leave), and each set of names is capped at
// maxTombs, dropping the lowest keys first. A contest that holds at its
// first look, with nobody ahead, joins an entry only if one is already in
// use (enterIfPresent): its watermark could only help a contest that listed
// before it, and making and dropping an entry per uncontended hold is
// measurable on that hot path.
type knowledge struct {
	mu      sync.Mutex
	parents map[incarnation]*parentKnowledge
}

// incarnation names one life of a parent node: its server path and czxid.
type incarnation struct {
	path  string
	czxid int64
}

// parentKnowledge is a Client's knowledge of one parent incarnation.
type parentKnowledge struct {
	k     *knowledge
	inc   incarnation
	refs  int     // contests using the entry; k.mu
	mark  string  // every contender with a key below mark is gone; k.mu
	local nameSet // names that are not protected, seen gone; k.mu
	names *tombs  // protected names seen gone, process-wide; graveyard.mu
	// examined counts the contenders looked up one by one (known), so that
	// tests can check the work of a hand-off does not grow with the queue;
	// k.mu.
	examined int
}

// nameSet maps contender names to their sort keys.
type nameSet map[string]string

// tombs is the process-wide record of the protected names gone under one
// parent incarnation.
type tombs struct {
	refs  int // entries (of any Client) using it
	names nameSet
}

// maxTombs bounds each set of names remembered per parent incarnation.
const maxTombs = 1 << 14

// graveyard holds the tombs by parent path, then czxid.
var graveyard = struct {
	mu     sync.Mutex
	byPath map[string]map[int64]*tombs
}{byPath: map[string]map[int64]*tombs{}}

// protectedUUID returns the uuid of a name made by a protected create;
// ok is false for any other name.
func protectedUUID(name string) (uuid string, ok bool) {
	uuid, _, ok = zkpath.ParseProtected(name)
	return uuid, ok
}

// isProtected reports whether name was made by a protected create.
func isProtected(name string) bool {
	_, ok := protectedUUID(name)
	return ok
}

// tombsFor returns the tombs of an incarnation and holds a reference.
func tombsFor(inc incarnation) *tombs {
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	byCzxid := graveyard.byPath[inc.path]
	if byCzxid == nil {
		byCzxid = map[int64]*tombs{}
		graveyard.byPath[inc.path] = byCzxid
	}
	t := byCzxid[inc.czxid]
	if t == nil {
		t = &tombs{} // names made by the first add
		byCzxid[inc.czxid] = t
	}
	t.refs++
	return t
}

// releaseTombs drops a reference; the last one forgets the tombs.
func releaseTombs(inc incarnation, t *tombs) {
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	if t.refs--; t.refs > 0 {
		return
	}
	byCzxid := graveyard.byPath[inc.path]
	if byCzxid[inc.czxid] == t {
		delete(byCzxid, inc.czxid)
		if len(byCzxid) == 0 {
			delete(graveyard.byPath, inc.path)
		}
	}
}

// bury records that the node name (with sort key key) under path has been
// deleted, or found missing, by this process. Only a protected name is
// recorded, under every incarnation of path that a contest is using; any
// other name is ignored.
func bury(path, name, key string) {
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	incs := graveyard.byPath[path]
	if len(incs) == 0 || !isProtected(name) { // no contest there: the usual case of a release
		return
	}
	for _, t := range incs {
		if t.names == nil {
			t.names = nameSet{}
		}
		t.names.add(name, key)
	}
}

// add records a name; past maxTombs it drops the lower half of the names,
// by key, then name. s must not be nil.
func (s nameSet) add(name, key string) {
	s[name] = key
	if len(s) <= maxTombs {
		return
	}
	all := make([]contend.Contender, 0, len(s))
	for n, k := range s {
		all = append(all, contend.Contender{Name: n, Key: k})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Key != all[j].Key {
			return all[i].Key < all[j].Key
		}
		return all[i].Name < all[j].Name
	})
	for _, c := range all[:len(all)/2] {
		delete(s, c.Name)
	}
}

func (k *knowledge) init() { k.parents = map[incarnation]*parentKnowledge{} }

// reset forgets what this Client learned by itself, the watermarks and the
// names that are not protected (after a session loss, to be safe). The
// process-wide record of protected names stays: it does not depend on a
// session.
func (k *knowledge) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.parents {
		p.mark = ""
		clear(p.local)
	}
}

// enter returns the entry for the parent incarnation (path, czxid), czxid
// being the parent's creation zxid as read with the children list, and
// holds a reference to it.
func (k *knowledge) enter(path string, czxid int64) *parentKnowledge {
	inc := incarnation{path: path, czxid: czxid}
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.parents[inc]
	if p == nil {
		p = &parentKnowledge{k: k, inc: inc, names: tombsFor(inc)} // local made by the first add
		k.parents[inc] = p
	}
	p.refs++
	return p
}

// enterIfPresent is enter for an incarnation that some contest of this
// Client already uses; it returns nil, and records nothing, otherwise.
func (k *knowledge) enterIfPresent(path string, czxid int64) *parentKnowledge {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.parents[incarnation{path: path, czxid: czxid}]
	if p != nil {
		p.refs++
	}
	return p
}

// leave drops a reference; the last one forgets the incarnation.
func (k *knowledge) leave(p *parentKnowledge) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p.refs <= 0 {
		return // already forgotten
	}
	if p.refs--; p.refs > 0 {
		return
	}
	if k.parents[p.inc] == p {
		delete(k.parents, p.inc)
	}
	releaseTombs(p.inc, p.names)
}

// gone records that c, a contender listed under this incarnation, is gone:
// process-wide when its name is protected, else for this Client only.
func (p *parentKnowledge) gone(c contend.Contender) {
	if isProtected(c.Name) {
		graveyard.mu.Lock()
		defer graveyard.mu.Unlock()
		if p.names.names == nil {
			p.names.names = nameSet{}
		}
		p.names.names.add(c.Name, c.Key)
		return
	}
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	if p.local == nil {
		p.local = nameSet{}
	}
	p.local.add(c.Name, c.Key)
}

// allGoneBelow records that every contender of this incarnation with a key
// below key is gone.
func (p *parentKnowledge) allGoneBelow(key string) {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	if key > p.mark {
		p.mark = key
	}
}

// known reports whether c is known to be gone; both locks are held.
func (p *parentKnowledge) known(c contend.Contender) bool {
	p.examined++
	if c.Key < p.mark {
		return true
	}
	if _, ok := p.local[c.Name]; ok {
		return true
	}
	_, ok := p.names.names[c.Name]
	return ok
}

// belowMark returns how many contenders at the start of cs have a key
// below the watermark: cs is sorted by key, as every snapshot of the
// engine is (a listing's contenders in order, less some), so they are the
// first ones and a binary search finds them. The contenders ahead of a
// waiter are as many as the queue is long; a waiter woken by its
// predecessor's going would otherwise look at each of them, making every
// hand-off cost as much as the queue is long. k.mu is held.
func (p *parentKnowledge) belowMark(cs []contend.Contender) int {
	if p.mark == "" {
		return 0
	}
	return sort.Search(len(cs), func(i int) bool { return cs[i].Key >= p.mark })
}

// prune returns cs, sorted by key, without the contenders known to be
// gone. It reuses cs's array.
func (p *parentKnowledge) prune(cs []contend.Contender) []contend.Contender {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	lo := p.belowMark(cs)
	out := cs[lo:lo]
	for _, c := range cs[lo:] {
		if !p.known(c) {
			out = append(out, c)
		}
	}
	return out
}

// unknown counts the contenders of cs, sorted by key, not known to be gone
// and, when blocks is not nil, blocking ours.
func (p *parentKnowledge) unknown(cs []contend.Contender, blocks func(contend.Contender) bool) int {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	n := 0
	for _, c := range cs[p.belowMark(cs):] {
		if (blocks == nil || blocks(c)) && !p.known(c) {
			n++
		}
	}
	return n
}
