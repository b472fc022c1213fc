package engine

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// These tests exercise the contender engine's in-memory knowledge; they
// need no server. Each uses its own parent path, because the record of
// protected names is process-wide.

const kazooPrefix = "4f1c2a9b8e7d6c5b4a39281706f5e4d3__lock__"

func newTestKnowledge() *knowledge {
	k := &knowledge{}
	k.init()
	return k
}

// testParent returns a parent path of the test's own.
func testParent(t *testing.T) string {
	return "/knowledge-test/" + strings.ReplaceAll(t.Name(), "/", "_")
}

// protectedContender returns a contender with a fresh protected name, as a
// mutex makes it.
func protectedContender(seq int) contend.Contender {
	key := fmt.Sprintf("%010d", seq)
	return contend.Contender{Name: zkpath.ProtectedPrefix + zkpath.NewUUID() + "-lock-" + key, Key: key}
}

// kazooContender returns a contender named as a Kazoo Lock names its nodes.
func kazooContender(seq int) contend.Contender {
	key := fmt.Sprintf("%010d", seq)
	return contend.Contender{Name: kazooPrefix + key, Key: key}
}

// enter enters the incarnation and leaves it at the end of the test.
func enter(t *testing.T, k *knowledge, path string, czxid int64) *parentKnowledge {
	t.Helper()
	p := k.enter(path, czxid)
	t.Cleanup(func() { k.leave(p) })
	return p
}

// isKnown reports whether p prunes c.
func isKnown(p *parentKnowledge, c contend.Contender) bool {
	return len(p.prune([]contend.Contender{c})) == 0
}

// tombsRefs returns the reference count of an incarnation's process-wide
// record, and whether it exists.
func tombsRefs(path string, czxid int64) (int, bool) {
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	t := graveyard.byPath[path][czxid]
	if t == nil {
		return 0, false
	}
	return t.refs, true
}

func pathRecorded(path string) bool {
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	_, ok := graveyard.byPath[path]
	return ok
}

func TestProtectedUUID(t *testing.T) {
	const u = "0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f"
	fresh := zkpath.NewUUID()
	for _, tc := range []struct {
		name string
		uuid string
		ok   bool
	}{
		{"_c_" + u + "-lock-0000000001", u, true},
		{"_c_" + u + "-__READ__0000000007", u, true},
		{"_c_" + u + "-latch-0000000000", u, true},
		{"_c_" + u + "-", u, true}, // an empty name after the prefix
		{"_c_" + strings.ToUpper(u) + "-lock-0000000001", strings.ToUpper(u), true},
		{"_c_" + fresh + "-lock-0000000001", fresh, true},

		{"", "", false},
		{"lock-0000000001", "", false},
		{kazooPrefix + "0000000001", "", false},
		{"_c_" + u, "", false},                                          // no separator
		{"_c_" + u + "lock-0000000001", "", false},                      // no separator
		{"_c_" + strings.ReplaceAll(u, "-", "") + "-lock-1", "", false}, // undashed
		{"_c_0f8b3c1e5-d2a-4b6f-9c7e-1a2b3c4d5e6f-lock-1", "", false},   // dash misplaced
		{"_c_0f8b3c1g-5d2a-4b6f-9c7e-1a2b3c4d5e6f-lock-1", "", false},   // not hex
		{"_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6-lock-1", "", false},    // short
		{"_C_" + u + "-lock-0000000001", "", false},
		{"x_c_" + u + "-lock-0000000001", "", false},
		{"_c_" + u + "_lock-0000000001", "", false},
	} {
		uuid, ok := protectedUUID(tc.name)
		assert.Equal(t, tc.ok, ok, "%q", tc.name)
		assert.Equal(t, tc.uuid, uuid, "%q", tc.name)
	}
}

func TestKnowledgeKazooNameBuriedIsNotPruned(t *testing.T) {
	path := testParent(t)
	p := enter(t, newTestKnowledge(), path, 10)
	kz := kazooContender(3)
	plain := contend.Contender{Name: "lock-0000000004", Key: "0000000004"}
	bury(path, kz.Name, kz.Key)
	bury(path, plain.Name, plain.Key)
	cs := []contend.Contender{kz, plain}
	assert.Equal(t, 2, p.unknown(cs, nil))
	assert.Equal(t, []contend.Contender{kz, plain}, p.prune(cs))
}

func TestKnowledgeProtectedNameBuriedIsPruned(t *testing.T) {
	path := testParent(t)
	k := newTestKnowledge()

	// With no contest under way on the path, nothing is recorded.
	early := protectedContender(1)
	bury(path, early.Name, early.Key)
	assert.False(t, pathRecorded(path))

	p := enter(t, k, path, 10)
	assert.False(t, isKnown(p, early))
	c2, c3, c4 := protectedContender(2), protectedContender(3), protectedContender(4)
	bury(path, c3.Name, c3.Key)
	cs := []contend.Contender{c2, c3, c4}
	assert.Equal(t, 2, p.unknown(cs, nil))
	out := p.prune(cs)
	assert.Equal(t, []contend.Contender{c2, c4}, out)
	assert.Same(t, &cs[0], &out[0], "prune reuses the array")
}

func TestKnowledgeIncarnations(t *testing.T) {
	path := testParent(t)
	k := newTestKnowledge()
	a := enter(t, k, path, 10) // the parent as first made
	b := enter(t, k, path, 20) // the parent after it was reaped and made again
	require.NotSame(t, a, b)

	t.Run("kazoo name seen gone in A is live in B", func(t *testing.T) {
		// Sequence numbers restart in B, and the same Kazoo Lock object
		// makes the same name there.
		kz := kazooContender(0)
		a.gone(kz)
		assert.True(t, isKnown(a, kz))
		assert.False(t, isKnown(b, kz))
	})
	t.Run("protected name seen gone in A is not recorded in B", func(t *testing.T) {
		c := protectedContender(1)
		a.gone(c)
		assert.True(t, isKnown(a, c))
		assert.False(t, isKnown(b, c))
	})
	t.Run("protected name deleted by the process is recorded in both", func(t *testing.T) {
		// bury does not know the parent's czxid; the name is unique.
		c := protectedContender(2)
		bury(path, c.Name, c.Key)
		assert.True(t, isKnown(a, c))
		assert.True(t, isKnown(b, c))
	})
	t.Run("kazoo name deleted by the process is recorded in neither", func(t *testing.T) {
		kz := kazooContender(2)
		bury(path, kz.Name, kz.Key)
		assert.False(t, isKnown(a, kz))
		assert.False(t, isKnown(b, kz))
	})
	t.Run("another path learns nothing", func(t *testing.T) {
		other := enter(t, k, path+"-other", 10)
		c := protectedContender(3)
		bury(path, c.Name, c.Key)
		a.gone(c)
		assert.False(t, isKnown(other, c))
	})
}

func TestKnowledgeSharedAcrossClients(t *testing.T) {
	path := testParent(t)
	k1, k2 := newTestKnowledge(), newTestKnowledge()
	p1 := enter(t, k1, path, 10)
	p2 := enter(t, k2, path, 10)
	require.NotSame(t, p1, p2)
	require.Same(t, p1.names, p2.names)

	c := protectedContender(1)
	p1.gone(c)
	assert.True(t, isKnown(p2, c), "protected names are shared by the process")

	kz := kazooContender(2)
	p1.gone(kz)
	assert.True(t, isKnown(p1, kz))
	assert.False(t, isKnown(p2, kz), "other names stay with the Client that saw them go")
}

func TestKnowledgeWatermarkPerIncarnation(t *testing.T) {
	path := testParent(t)
	k := newTestKnowledge()
	a := enter(t, k, path, 10)
	b := enter(t, k, path, 20)
	other := enter(t, newTestKnowledge(), path, 10) // another Client, same incarnation

	a.allGoneBelow("0000000005")
	for _, c := range []contend.Contender{kazooContender(4), protectedContender(0)} {
		assert.True(t, isKnown(a, c), "%v below the mark", c)
		assert.False(t, isKnown(b, c), "%v in another incarnation", c)
		assert.False(t, isKnown(other, c), "%v in another Client", c)
	}
	assert.False(t, isKnown(a, kazooContender(5)), "the mark itself is not below the mark")
	assert.False(t, isKnown(a, kazooContender(6)))

	a.allGoneBelow("0000000002") // a mark never goes down
	assert.True(t, isKnown(a, kazooContender(4)))

	again := enter(t, k, path, 10)
	assert.Same(t, a, again, "contests on one incarnation share its entry")
	assert.True(t, isKnown(again, kazooContender(4)))
}

func TestKnowledgeResetForgetsWatermarks(t *testing.T) {
	path := testParent(t)
	k := newTestKnowledge()
	p := enter(t, k, path, 10)
	kz, c := kazooContender(7), protectedContender(8)
	p.allGoneBelow("0000000005")
	p.gone(kz)
	p.gone(c)

	k.reset()
	assert.False(t, isKnown(p, kazooContender(4)), "the watermark is forgotten")
	assert.False(t, isKnown(p, kz), "names learned by this Client alone are forgotten")
	assert.True(t, isKnown(p, c), "protected names stay: they do not depend on a session")

	p.allGoneBelow("0000000003") // the entry is still usable
	assert.True(t, isKnown(p, kazooContender(2)))
}

func TestKnowledgeCapEvictsLowestKeys(t *testing.T) {
	path := testParent(t)
	p := enter(t, newTestKnowledge(), path, 10)
	const uuid = "0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f"
	// Insert in a scrambled order, so eviction cannot depend on it.
	const n = maxTombs + 1
	prot := func(i int) contend.Contender {
		key := fmt.Sprintf("%010d", i)
		return contend.Contender{Name: zkpath.ProtectedPrefix + uuid + "-lock-" + key, Key: key}
	}
	for j := 0; j < n; j++ {
		i := j * 7919 % n // 7919 is prime, so this visits each index once
		bury(path, prot(i).Name, prot(i).Key)
		p.gone(kazooContender(i))
	}
	cut := n / 2 // the lower half goes
	for _, tc := range []struct {
		what string
		c    func(int) contend.Contender
	}{{"protected", prot}, {"kazoo", kazooContender}} {
		assert.False(t, isKnown(p, tc.c(0)), tc.what)
		assert.False(t, isKnown(p, tc.c(cut-1)), tc.what)
		assert.True(t, isKnown(p, tc.c(cut)), tc.what)
		assert.True(t, isKnown(p, tc.c(n-1)), tc.what)
	}
	graveyard.mu.Lock()
	assert.Len(t, p.names.names, n-cut)
	graveyard.mu.Unlock()
	assert.Len(t, p.local, n-cut)

	// Names with equal keys are dropped too, by name.
	s := nameSet{}
	for i := 0; i < n; i++ {
		s.add(fmt.Sprintf("n%06d", i), "k")
	}
	assert.Len(t, s, n-cut)
	assert.NotContains(t, s, "n000000")
	assert.Contains(t, s, fmt.Sprintf("n%06d", n-1))
}

func TestKnowledgeRefcountsFreeOnLastLeave(t *testing.T) {
	path := testParent(t)
	k1, k2 := newTestKnowledge(), newTestKnowledge()

	p1 := k1.enter(path, 10)
	require.Same(t, p1, k1.enter(path, 10))
	refs, ok := tombsRefs(path, 10)
	require.True(t, ok)
	assert.Equal(t, 1, refs, "one reference per Client entry, not per contest")
	p2 := k2.enter(path, 10)
	refs, _ = tombsRefs(path, 10)
	assert.Equal(t, 2, refs)
	b := k1.enter(path, 20)

	c := protectedContender(1)
	p1.gone(c)
	k1.leave(p1)
	assert.Contains(t, k1.parents, incarnation{path, 10}, "a contest still uses it")
	k1.leave(p1)
	assert.NotContains(t, k1.parents, incarnation{path, 10})
	refs, _ = tombsRefs(path, 10)
	assert.Equal(t, 1, refs)
	assert.True(t, isKnown(p2, c), "the other Client keeps the record")

	k1.leave(p1) // one leave too many changes nothing
	refs, _ = tombsRefs(path, 10)
	assert.Equal(t, 1, refs)

	k2.leave(p2)
	_, ok = tombsRefs(path, 10)
	assert.False(t, ok, "the last leave frees the incarnation's record")
	assert.True(t, pathRecorded(path), "incarnation 20 is still in use")
	k1.leave(b)
	assert.False(t, pathRecorded(path))
	assert.Empty(t, k1.parents)
	assert.Empty(t, k2.parents)

	// Entering again starts from nothing.
	p := enter(t, k1, path, 10)
	assert.False(t, isKnown(p, c))
}

// TestKnowledgeConcurrent lets the race detector check the locking.
func TestKnowledgeConcurrent(t *testing.T) {
	path := testParent(t)
	k1, k2 := newTestKnowledge(), newTestKnowledge()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		k := k1
		if g%2 == 1 {
			k = k2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				p := k.enter(path, int64(i%3))
				c, kz := protectedContender(i), kazooContender(i)
				bury(path, c.Name, c.Key)
				p.gone(kz)
				p.gone(protectedContender(i + 1))
				p.allGoneBelow(fmt.Sprintf("%010d", i/2))
				p.unknown([]contend.Contender{c, kz}, nil)
				p.prune([]contend.Contender{c, kz})
				if i%50 == 0 {
					k.reset()
				}
				k.leave(p)
			}
		}()
	}
	wg.Wait()
	assert.False(t, pathRecorded(path))
	assert.Empty(t, k1.parents)
	assert.Empty(t, k2.parents)
}
