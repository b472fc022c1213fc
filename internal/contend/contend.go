// Package contend holds the rule every lock-like recipe is decided by,
// after Curator's LockInternalsDriver: how contender nodes sort (Curator's
// fixForSorting, with Kazoo's and other clients' lock names), and the one
// check (Driver.Decide) of whether ours holds or which node to wait for.
// It is pure: the engine's Contest runs it against the server.
package contend

import (
	"slices"
	"strings"
)

// Contender is one node in a contender queue.
type Contender struct {
	Name string // the node's name under the recipe path
	Key  string // what contenders are ordered by
}

// Driver is the rule of one lock-like recipe, after Curator's
// LockInternalsDriver: how its nodes sort, how many contenders may hold at
// once, which contenders ahead of ours can keep ours from holding, and
// when the going of one may have let a node appear that was not listed.
// Drivers differ only in these; the one check (Decide) does the rest.
type Driver struct {
	// Names are the lock names in node names. A node sorts by the text
	// after the last occurrence of the first of them it contains (Names[0]
	// is the recipe's own; the others recognise other clients' nodes,
	// Kazoo's "__lock__" say), or by its whole name when it contains none.
	Names []string
	// Leases is how many contenders may hold at once; 0 means 1.
	Leases int
	// Blocks reports whether other, ordered ahead of ours, can keep ours
	// from holding (a reader does not block a reader). Nil: every
	// contender blocks.
	Blocks func(other Contender) bool
	// Relist reports whether the deletion of gone may have let a contender
	// appear ahead of ours that the contest has not listed (a write lock
	// downgraded to a read node with the same sequence number). The engine
	// then lists the children again instead of walking its snapshot. Nil:
	// never.
	Relist func(gone Contender) bool
	// Recipe names the recipe in metrics (the "recipe" label: mutex,
	// semaphore, selector, ...). Empty: the contest is not measured, as a
	// recipe's internal lock is not (the semaphore's, whose wait counts in
	// the semaphore's own).
	Recipe string
	// Path is the recipe's path as the user gave it, for metrics (the
	// "path" label). Empty: the contest's parent without the namespace.
	Path string
}

// Verdict is what Decide answers: held, or else the contender to wait for.
type Verdict struct {
	Held bool
	// Watch is, when not Held, the index in the contenders ahead of the
	// one whose deletion may change the answer.
	Watch int
}

// SortKey returns the text child is ordered by.
func (d *Driver) SortKey(child string) string {
	if len(d.Names) == 0 {
		return child
	}
	return SortKey(child, d.Names[0], d.Names[1:]...)
}

// Decide is the one check of every lock-like recipe: ours holds when
// fewer than Leases of the contenders ahead of it (below, lowest first)
// block it; otherwise it waits for the Leases-th blocking contender
// counting back from ours (for a lock, the nearest blocking one).
//
// below may still list contenders that are gone: removing any of them
// can only turn a wait into a hold, never a hold into a wait, so a Held
// answer is always right.
func (d *Driver) Decide(below []Contender) Verdict {
	n := max(d.Leases, 1)
	if d.Blocks == nil {
		if len(below) < n {
			return Verdict{Held: true}
		}
		return Verdict{Watch: len(below) - n}
	}
	for i := len(below) - 1; i >= 0; i-- {
		if d.Blocks(below[i]) {
			if n--; n == 0 {
				return Verdict{Watch: i}
			}
		}
	}
	return Verdict{Held: true}
}

// BlockedBy reports whether other blocks ours (Blocks, or every contender
// when it is nil).
func (d *Driver) BlockedBy(other Contender) bool { return d.Blocks == nil || d.Blocks(other) }

// RelistAfter reports whether gone's deletion calls for a new list
// (Relist, or never when it is nil).
func (d *Driver) RelistAfter(gone Contender) bool { return d.Relist != nil && d.Relist(gone) }

// SortKey returns the text of child after the last occurrence of lockName,
// or of the first of extra that occurs in it, or child itself when none
// occurs (Curator's fixForSorting).
func SortKey(child, lockName string, extra ...string) string {
	if i := strings.LastIndex(child, lockName); i >= 0 {
		return child[i+len(lockName):]
	}
	for _, e := range extra {
		if i := strings.LastIndex(child, e); i >= 0 {
			return child[i+len(e):]
		}
	}
	return child
}

// SortContenders orders child names by the driver's key (ties by name).
func SortContenders(children []string, d *Driver) []Contender {
	out := make([]Contender, len(children))
	for i, ch := range children {
		out[i] = Contender{Name: ch, Key: d.SortKey(ch)}
	}
	slices.SortFunc(out, compareContenders) // sort.Slice would allocate
	return out
}

func compareContenders(a, b Contender) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}
