package contend

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Unit tests of the contender engine's pure helpers; no server needed.

func TestSortKey(t *testing.T) {
	const u = "_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-"
	for _, tc := range []struct {
		child, lockName string
		extra           []string
		want            string
	}{
		{u + "lock-0000000001", "lock-", nil, "0000000001"},
		{u + "__READ__0000000002", "__READ__", nil, "0000000002"},
		{u + "latch-0000000003", "latch-", nil, "0000000003"},
		// The text after the LAST occurrence of the lock name.
		{u + "lock-lock-0000000004", "lock-", nil, "0000000004"},
		{"lock-x-lock-0000000005", "lock-", nil, "0000000005"},
		{"lock-", "lock-", nil, ""},
		// Kazoo's nodes, recognised through an extra name.
		{"4f1c2a9b8e7d6c5b4a39281706f5e4d3__lock__0000000006", "lock-", []string{"__lock__"}, "0000000006"},
		// The lock name wins over the extras; among extras, the first that occurs.
		{"a__lock__lock-0000000007", "lock-", []string{"__lock__"}, "0000000007"},
		{"x-0000000008y-0000000009", "lock-", []string{"y-", "x-"}, "0000000009"},
		{"x-0000000008y-0000000009", "lock-", []string{"x-", "y-"}, "0000000008y-0000000009"},
		// None occurs: the whole name.
		{"foreign-node", "lock-", nil, "foreign-node"},
		{"foreign-node", "lock-", []string{"__lock__"}, "foreign-node"},
		{"", "lock-", nil, ""},
	} {
		assert.Equal(t, tc.want, SortKey(tc.child, tc.lockName, tc.extra...), "%q %q %q", tc.child, tc.lockName, tc.extra)
	}
}

func TestSortContenders(t *testing.T) {
	const (
		a = "_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-"
		b = "_c_9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d-"
	)
	d := &Driver{Names: []string{"__WRIT__", "__READ__", "__lock__"}}
	children := []string{
		b + "__READ__0000000003", // a downgrade: the writer's sequence number
		"zz-foreign",
		a + "__READ__0000000010",
		a + "__WRIT__0000000003",
		"4f1c2a9b8e7d6c5b4a39281706f5e4d3__lock__0000000001",
		b + "__WRIT__0000000002",
	}
	orig := append([]string(nil), children...)
	got := SortContenders(children, d)
	assert.Equal(t, []Contender{
		{Name: "4f1c2a9b8e7d6c5b4a39281706f5e4d3__lock__0000000001", Key: "0000000001"},
		{Name: b + "__WRIT__0000000002", Key: "0000000002"},
		{Name: a + "__WRIT__0000000003", Key: "0000000003"}, // equal keys: by name
		{Name: b + "__READ__0000000003", Key: "0000000003"},
		{Name: a + "__READ__0000000010", Key: "0000000010"},
		{Name: "zz-foreign", Key: "zz-foreign"},
	}, got)
	assert.Equal(t, orig, children, "the input is not changed")

	assert.Empty(t, SortContenders(nil, d))
}

func TestDriverDecide(t *testing.T) {
	for _, tc := range []struct {
		leases, ours int // ours: how many contenders are ahead of ours
		held         bool
		watch        int // index in below of the contender to watch
	}{
		{1, 0, true, 0},
		{1, 1, false, 0},
		{1, 5, false, 4}, // the one just ahead
		{0, 0, true, 0},  // no Leases means one
		{0, 2, false, 1},
		{-3, 1, false, 0},
		{3, 0, true, 0},
		{3, 2, true, 0},
		{3, 3, false, 0}, // Leases places ahead
		{3, 7, false, 4},
	} {
		below := make([]Contender, tc.ours)
		for i := range below {
			below[i] = Contender{Name: fmt.Sprintf("lock-%010d", i), Key: fmt.Sprintf("%010d", i)}
		}
		all := func(Contender) bool { return true }
		for _, d := range []*Driver{
			{Names: []string{"lock-"}, Leases: tc.leases},
			{Names: []string{"lock-"}, Leases: tc.leases, Blocks: all}, // the same, spelled out
		} {
			v := d.Decide(below)
			assert.Equal(t, tc.held, v.Held, "Leases %d, %d ahead", tc.leases, tc.ours)
			if !tc.held {
				assert.Equal(t, tc.watch, v.Watch, "Leases %d, %d ahead", tc.leases, tc.ours)
			}
		}
	}
}

// Only the contenders that block count: a reader waits for the nearest
// writer ahead, and holds beside readers.
func TestDriverDecideBlocks(t *testing.T) {
	writer := func(c Contender) bool { return c.Name[0] == 'w' }
	d := &Driver{Names: []string{"r-", "w-"}, Blocks: writer}
	q := func(names ...string) []Contender {
		out := make([]Contender, len(names))
		for i, n := range names {
			out[i] = Contender{Name: n, Key: d.SortKey(n)}
		}
		return out
	}
	for _, tc := range []struct {
		below []Contender
		held  bool
		watch int
	}{
		{nil, true, 0},
		{q("r-01", "r-02"), true, 0},
		{q("w-01"), false, 0},
		{q("w-01", "r-02", "r-03"), false, 0},
		{q("r-01", "w-02", "r-03", "w-04", "r-05"), false, 3},
	} {
		v := d.Decide(tc.below)
		assert.Equal(t, tc.held, v.Held, "%v", tc.below)
		if !tc.held {
			assert.Equal(t, tc.watch, v.Watch, "%v", tc.below)
		}
	}
	two := &Driver{Names: []string{"r-"}, Leases: 2, Blocks: writer}
	assert.True(t, two.Decide(q("r-01", "w-02", "r-03")).Held, "one blocking contender, two leases")
	assert.Equal(t, Verdict{Watch: 0}, two.Decide(q("w-01", "w-02", "r-03")), "the second blocking one back")
}

func TestDriverSortKeyAndRelist(t *testing.T) {
	d := &Driver{Names: []string{"lock-", "__lock__"}}
	assert.Equal(t, "0000000001", d.SortKey("_c_0f8b3c1e-5d2a-4b6f-9c7e-1a2b3c4d5e6f-lock-0000000001"))
	assert.Equal(t, "0000000002", d.SortKey("4f1c2a9b8e7d6c5b4a39281706f5e4d3__lock__0000000002"))
	assert.Equal(t, "other", d.SortKey("other"))
	assert.Equal(t, "other", (&Driver{}).SortKey("other"))
	assert.False(t, d.RelistAfter(Contender{Name: "x-lock-0000000001", Key: "0000000001"}))
	assert.True(t, d.BlockedBy(Contender{Name: "x"}))
}
