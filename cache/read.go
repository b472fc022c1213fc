package cache

// Reading the cache: every read is from memory, under the cache's read
// lock, and sees one moment of it.

import (
	"strings"
)

// visible reports whether the node at full is part of the cache's
// public view (a children cache hides its parent).
func (c *Cache) visible(full string) bool {
	return !(c.o.childrenOnly && full == c.full)
}

// Get returns the cached node at path (namespace-relative, as given to
// New), and whether it is cached.
func (c *Cache) Get(path string) (Node, bool) {
	if !c.ok() {
		return Node{}, false
	}
	full, err := c.c.FullPath(path)
	if err != nil || !c.visible(full) {
		return Node{}, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	slot, _ := c.findLocked(full)
	if slot < 0 {
		return Node{}, false
	}
	return c.nodeLocked(slot, full), true
}

// Children returns the names of the cached children of the node at path,
// sorted, and whether that node is cached (a node at the maximum depth
// has no cached children).
func (c *Cache) Children(path string) ([]string, bool) {
	if !c.ok() {
		return nil, false
	}
	full, err := c.c.FullPath(path)
	if err != nil {
		return nil, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	slot, _ := c.findLocked(full)
	if slot < 0 {
		return nil, false
	}
	return c.childNamesLocked(slot), true
}

// childNamesLocked returns the names of slot's children, sorted.
func (c *Cache) childNamesLocked(slot int32) []string {
	l := c.st.children(slot)
	kids := make([]string, len(l))
	for i, k := range l {
		kids[i] = string(c.st.name(k))
	}
	return kids
}

// rel returns full's path below the cache's root, as the store takes it
// ("" for the root, else names joined by "/"); false outside the root's
// subtree.
func (c *Cache) rel(full string) (string, bool) {
	switch {
	case full == c.full:
		return "", true
	case c.full == "/":
		return full[min(1, len(full)):], len(full) > 1 && full[0] == '/'
	case len(full) > len(c.full)+1 && full[len(c.full)] == '/' && strings.HasPrefix(full, c.full):
		return full[len(c.full)+1:], true
	}
	return "", false
}

// findLocked returns the slot of the node at full (-1: not cached) and
// its parent's (-1 for the root, or when the parent is not cached).
func (c *Cache) findLocked(full string) (slot, parent int32) {
	rel, ok := c.rel(full)
	if !ok {
		return -1, -1
	}
	return c.st.find(rel)
}

// nodeLocked returns slot's Node; full is its server path.
func (c *Cache) nodeLocked(slot int32, full string) Node {
	data, st := c.st.node(slot)
	return Node{Path: c.e.Namespace().Strip(full), Data: data, Stat: st}
}

// joinName returns the path of parent's child name, in one allocation.
func joinName(parent string, name []byte) string {
	var b strings.Builder
	b.Grow(len(parent) + 1 + len(name))
	b.WriteString(parent)
	if parent != "/" {
		b.WriteByte('/')
	}
	b.Write(name)
	return b.String()
}

// Size returns the number of cached nodes.
func (c *Cache) Size() int {
	if !c.ok() {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.st.size()
	if c.o.childrenOnly && c.st.root >= 0 {
		n--
	}
	return n
}

// Snapshot returns every cached node, as of one moment (no change comes
// between two of them), in depth-first order, parents before children
// and siblings sorted by name.
func (c *Cache) Snapshot() []Node {
	if !c.ok() {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Node, 0, c.st.size())
	c.preorderLocked(func(full string, slot int32) {
		if c.visible(full) {
			out = append(out, c.nodeLocked(slot, full))
		}
	})
	return out
}

// Walk calls fn with every node of one Snapshot, in its order, until fn
// returns false. fn runs without the cache's lock: it may call the
// cache's methods. A nil fn does nothing.
func (c *Cache) Walk(fn func(Node) bool) {
	if fn == nil {
		return
	}
	for _, n := range c.Snapshot() {
		if !fn(n) {
			return
		}
	}
}

// preorderLocked visits the cached nodes depth-first from the root,
// siblings sorted, with their server paths; c.mu is held, and visit
// changes nothing.
func (c *Cache) preorderLocked(visit func(full string, slot int32)) {
	var walk func(full string, slot int32)
	walk = func(full string, slot int32) {
		visit(full, slot)
		for _, k := range c.st.children(slot) {
			walk(joinName(full, c.st.name(k)), k)
		}
	}
	if c.st.root >= 0 {
		walk(c.full, c.st.root)
	}
}
