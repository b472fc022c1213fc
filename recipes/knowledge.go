package recipes

import (
	"sort"
	"sync"
)

// What the contender engine knows without asking the server. It holds only
// facts that stay true, which is what lets a waiter hand a lock on without
// listing the children again:
//
//   - The names of contender nodes seen to go (deleted by us, reported by a
//     watch, or found missing). A name carries a random uuid, so a name once
//     deleted never exists again, on any ensemble: this record is shared by
//     every Client of the process, so that sessions of one process learn
//     from each other's releases.
//   - Per Client and parent incarnation (path + czxid), a watermark: every
//     contender whose key is below it is gone. Sequence numbers only grow
//     within one incarnation of a parent.
//
// Forgetting is always safe (it costs a children list), so both are
// bounded: a parent's entries live while a contest on it is under way, and
// a parent's names are capped, dropping the lowest keys first.
type knowledge struct {
	mu      sync.Mutex
	parents map[string]*parentKnowledge // by parent path
}

type parentKnowledge struct {
	k     *knowledge
	path  string
	czxid int64
	refs  int
	mark  string // every contender with a key below mark is gone
	names *tombs
}

// tombs is the process-wide record of deleted contender names under one
// parent path.
type tombs struct {
	refs  int
	names map[string]string // name -> key
}

// maxTombs bounds the names remembered per parent path.
const maxTombs = 1 << 14

var graveyard = struct {
	mu       sync.Mutex
	byParent map[string]*tombs
}{byParent: map[string]*tombs{}}

func tombsFor(path string) *tombs {
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	t := graveyard.byParent[path]
	if t == nil {
		t = &tombs{names: map[string]string{}}
		graveyard.byParent[path] = t
	}
	t.refs++
	return t
}

func releaseTombs(path string, t *tombs) {
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	if t.refs--; t.refs <= 0 && graveyard.byParent[path] == t {
		delete(graveyard.byParent, path)
	}
}

// bury records that name (with sort key key) under path is gone, if
// anyone is contending there.
func bury(path, name, key string) {
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	if t := graveyard.byParent[path]; t != nil {
		t.add(name, key)
	}
}

// add records a name; graveyard.mu is held.
func (t *tombs) add(name, key string) {
	t.names[name] = key
	if len(t.names) <= maxTombs {
		return
	}
	keys := make([]string, 0, len(t.names))
	for _, k := range t.names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cut := keys[len(keys)/2]
	for n, k := range t.names {
		if k < cut {
			delete(t.names, n)
		}
	}
}

func (k *knowledge) init() { k.parents = map[string]*parentKnowledge{} }

// reset forgets the watermarks (after a session loss, to be safe).
func (k *knowledge) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.parents {
		p.mark = ""
	}
}

// enter returns the entry for a parent incarnation and holds a reference.
func (k *knowledge) enter(path string, czxid int64) *parentKnowledge {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.parents[path]
	if p != nil && p.czxid != czxid {
		// Another incarnation of the parent: contests on the old one keep
		// their entry, this one gets a fresh watermark.
		p = &parentKnowledge{k: k, path: path, czxid: czxid, names: tombsFor(path)}
		if k.parents[path].czxid < czxid {
			k.parents[path] = p
		}
	} else if p == nil {
		p = &parentKnowledge{k: k, path: path, czxid: czxid, names: tombsFor(path)}
		k.parents[path] = p
	}
	p.refs++
	return p
}

// leave drops a reference; the last one forgets the parent.
func (k *knowledge) leave(p *parentKnowledge) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p.refs--; p.refs > 0 {
		return
	}
	if k.parents[p.path] == p {
		delete(k.parents, p.path)
	}
	releaseTombs(p.path, p.names)
}

func (p *parentKnowledge) gone(c Contender) { bury(p.path, c.Name, c.Key) }

// allGoneBelow records that every contender with a key below key is gone.
func (p *parentKnowledge) allGoneBelow(key string) {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	if key > p.mark {
		p.mark = key
	}
}

// known reports whether c is known to be gone; both locks are held.
func (p *parentKnowledge) known(c Contender) bool {
	if c.Key < p.mark {
		return true
	}
	_, ok := p.names.names[c.Name]
	return ok
}

// prune returns cs without the contenders known to be gone. It reuses
// cs's array.
func (p *parentKnowledge) prune(cs []Contender) []Contender {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	out := cs[:0]
	for _, c := range cs {
		if !p.known(c) {
			out = append(out, c)
		}
	}
	return out
}

// unknown counts the contenders of cs not known to be gone.
func (p *parentKnowledge) unknown(cs []Contender) int {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	n := 0
	for _, c := range cs {
		if !p.known(c) {
			n++
		}
	}
	return n
}
