package recipes

import "sync"

// knowledge is what a Client has learnt about contender queues: names of
// contenders it saw go, and per parent incarnation (path + czxid) a
// watermark below which every contender is gone. Both are facts that stay
// true (names carry a random uuid; sequence numbers only grow within one
// incarnation of a parent), which is what lets waiters of one Client hand a
// lock on without listing the children again. Entries live while a contest
// on the parent is under way.
type knowledge struct {
	mu      sync.Mutex
	parents map[string]*parentKnowledge // by parent path
}

type parentKnowledge struct {
	k     *knowledge
	path  string
	czxid int64
	refs  int
	mark  string              // every contender with a key below mark is gone
	names map[string]struct{} // contenders known to be gone
}

func (k *knowledge) init() { k.parents = map[string]*parentKnowledge{} }

// reset forgets everything (after a session loss, to be safe).
func (k *knowledge) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.parents {
		p.mark = ""
		p.names = map[string]struct{}{}
	}
}

// enter returns the entry for a parent incarnation and holds a reference.
func (k *knowledge) enter(path string, czxid int64) *parentKnowledge {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.parents[path]
	if p == nil || p.czxid != czxid {
		if p != nil && p.refs > 0 && p.czxid > czxid {
			// a contest listed an older incarnation than one already known:
			// keep the newer entry, give this contest a private one
			return &parentKnowledge{k: k, path: path, czxid: czxid, refs: 1, names: map[string]struct{}{}}
		}
		old := p
		p = &parentKnowledge{k: k, path: path, czxid: czxid, names: map[string]struct{}{}}
		if old != nil { // names are unique forever: keep them
			p.names = old.names
		}
		k.parents[path] = p
	}
	p.refs++
	return p
}

// leave drops a reference; the last one forgets the parent.
func (k *knowledge) leave(p *parentKnowledge) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p.refs--
	if p.refs <= 0 && k.parents[p.path] == p {
		delete(k.parents, p.path)
	}
}

// deleted records that the node at path is gone.
func (k *knowledge) deleted(path string) {
	parent, name := SplitPath(path)
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.parents[parent]; p != nil {
		p.names[name] = struct{}{}
	}
}

func (p *parentKnowledge) gone(name string) {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	p.names[name] = struct{}{}
}

// allGoneBelow records that every contender with a key below key is gone.
func (p *parentKnowledge) allGoneBelow(key string) {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	if key > p.mark {
		p.mark = key
	}
}

// prune returns cs (sorted by key) without the contenders known to be
// gone. It reuses cs's array.
func (p *parentKnowledge) prune(cs []Contender) []Contender {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	out := cs[:0]
	for _, c := range cs {
		if c.Key < p.mark {
			continue
		}
		if _, ok := p.names[c.Name]; ok {
			continue
		}
		out = append(out, c)
	}
	return out
}

// unknown counts the contenders of cs not known to be gone.
func (p *parentKnowledge) unknown(cs []Contender) int {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	n := 0
	for _, c := range cs {
		if _, ok := p.names[c.Name]; !ok && c.Key >= p.mark {
			n++
		}
	}
	return n
}
