package engine

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/internal/contend"
)

// drainExamined plays the engine's part in the drain of a queue of n
// contenders of one process spread over sessions Clients (the benchmark's
// waiters row), each woken by its predecessor's going as Contest.woke and
// acquire do it, and returns the contenders the knowledge looked up one by
// one per hand-off.
func drainExamined(t *testing.T, n, sessions int) float64 {
	path := testParent(t)
	ks := make([]*knowledge, sessions)
	for i := range ks {
		ks[i] = newTestKnowledge()
	}
	cs := make([]contend.Contender, n)
	for i := range cs {
		cs[i] = protectedContender(i + 1)
	}
	ps := make([]*parentKnowledge, n)
	for i := 1; i < n; i++ { // every waiter listed, then watched its predecessor
		ps[i] = ks[i%sessions].enter(path, 10)
	}
	bury(path, cs[0].Name, cs[0].Key) // the holder releases
	buf := make([]contend.Contender, n)
	examined := 0
	for i := 1; i < n; i++ {
		p, below := ps[i], buf[:i]
		before := p.examined
		copy(below, cs[:i]) // the snapshot of waiter i, from its listing
		p.gone(cs[i-1])     // its watch fires
		assert.Equal(t, 0, p.unknown(below[:i-1], nil), "waiter %d", i)
		assert.Empty(t, p.prune(below), "waiter %d holds", i)
		examined += p.examined - before
		p.allGoneBelow(cs[i].Key)
		ks[i%sessions].leave(p) // its release
		bury(path, cs[i].Name, cs[i].Key)
	}
	for _, k := range ks {
		assert.Empty(t, k.parents)
	}
	return float64(examined) / float64(n-1)
}

// TestKnowledgeHandOffWorkIsBounded: a waiter woken by its predecessor's
// going looks up the contenders ahead of it above its Client's watermark
// only, whose number is bounded by the sessions, not by the queue's length
// (it was the whole queue ahead: the client CPU per hand-off of the
// benchmark's waiters row grew with the number of waiters).
func TestKnowledgeHandOffWorkIsBounded(t *testing.T) {
	const sessions = 4
	small, large := drainExamined(t, 250, sessions), drainExamined(t, 2000, sessions)
	t.Logf("contenders looked up per hand-off: %.1f (250 waiters), %.1f (2,000)", small, large)
	assert.LessOrEqual(t, large, float64(2*sessions+2), "contenders looked up per hand-off, 2,000 waiters")
	assert.LessOrEqual(t, large, small+1, "per hand-off: 250 waiters %.1f, 2,000 waiters %.1f", small, large)
}

// TestKnowledgePruneAboveMark: the contenders below the watermark go
// without a look; those above it by name.
func TestKnowledgePruneAboveMark(t *testing.T) {
	path := testParent(t)
	p := enter(t, newTestKnowledge(), path, 10)
	var cs []contend.Contender
	for i := 1; i <= 10; i++ {
		cs = append(cs, protectedContender(i))
	}
	p.allGoneBelow(cs[6].Key) // 1..6 gone
	p.gone(cs[8])             // 9 gone
	reader := func(c contend.Contender) bool { return c.Key != cs[7].Key }
	assert.Equal(t, 3, p.unknown(cs, nil))    // 7, 8, 10
	assert.Equal(t, 2, p.unknown(cs, reader)) // 7, 10 block
	assert.Equal(t, 0, p.unknown(cs[:6], nil))
	out := p.prune(slices.Clone(cs))
	assert.Equal(t, []contend.Contender{cs[6], cs[7], cs[9]}, out)
	assert.Equal(t, 0, len(p.prune(slices.Clone(cs[:6]))))
}
