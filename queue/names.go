package queue

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Node name prefixes, as Curator and ZooKeeper's contrib queue name them.
const (
	// SimplePrefix starts the name of every SimpleQueue item (qn-<seq>),
	// as in Curator's SimpleDistributedQueue and ZooKeeper's contrib
	// DistributedQueue.
	SimplePrefix = "qn-"
	// ItemPrefix starts the name of every item of a Queue, IDQueue,
	// PriorityQueue and DelayQueue (queue-...<seq>), as in Curator's
	// DistributedQueue family. Other children of a queue are ignored.
	ItemPrefix = "queue-"
)

// seqLen is the length of the server's sequence suffix.
const seqLen = 10

// kind is which member of the DistributedQueue family a queue is.
type kind uint8

const (
	kindPlain kind = iota
	kindID
	kindPriority
	kindDelay
)

func (k kind) String() string {
	switch k {
	case kindID:
		return "id queue"
	case kindPriority:
		return "priority queue"
	case kindDelay:
		return "delay queue"
	}
	return "queue"
}

// idSeparator brackets an id queue's id and a delay queue's time.
const idSeparator = "|"

// fixID is Curator's: '/' and '|' in an id become '_'.
func fixID(id string) string {
	return strings.NewReplacer("/", "_", idSeparator, "_").Replace(id)
}

// idName is the name (before the sequence) of an id queue's item.
func idName(id string) string { return ItemPrefix + idSeparator + fixID(id) + idSeparator }

// parseID returns an item's id and its name without "|id|" (what an id
// queue sorts by); ok is false for a name without two separators.
func parseID(name string) (id, cleaned string, ok bool) {
	i := strings.Index(name, idSeparator)
	if i < 0 {
		return name, name, false
	}
	j := strings.Index(name[i+1:], idSeparator)
	if j < 0 {
		return name, name, false
	}
	j += i + 1
	return name[i+1 : j], name[:i] + name[j+1:], true
}

// priorityName is Curator's: "1" for a priority >= 0, else "0", then the
// priority's 32 bits in 8 upper-case hex digits, so that names sort in
// priority order, the lowest first.
func priorityName(p int32) string {
	s := "1"
	if p < 0 {
		s = "0"
	}
	return fmt.Sprintf("%s%s%08X", ItemPrefix, s, uint32(p))
}

// delayName is Curator's: the due time in epoch milliseconds, in upper-case
// hex of at least 8 digits, between separators.
func delayName(until time.Time) string {
	return fmt.Sprintf("%s%s%08X%s", ItemPrefix, idSeparator, until.UnixMilli(), idSeparator)
}

// dueOf reads a delay queue item's due time in epoch milliseconds, 0 when
// the name carries none (due at once), as Curator reads it.
func dueOf(name string) int64 {
	j := strings.LastIndex(name, idSeparator)
	if j <= 0 {
		return 0
	}
	i := strings.LastIndex(name[:j], idSeparator)
	if i <= 0 || j <= i+1 {
		return 0
	}
	ms, err := strconv.ParseInt(name[i+1:j], 16, 64)
	if err != nil {
		return 0
	}
	return ms
}

// requeueName is the name (before the sequence) an item is put back
// under: its own name without its sequence suffix, so that it never grows
// (CURATOR-56) and keeps its id (CURATOR-224), priority and due time.
func requeueName(name string) string {
	if len(name) > len(ItemPrefix)+seqLen-1 && isDigits(name[len(name)-seqLen:]) {
		return name[:len(name)-seqLen]
	}
	return ItemPrefix
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// seqOf returns the sequence suffix of a name ("" when it has none).
func seqOf(name string) string {
	if len(name) >= seqLen && isDigits(name[len(name)-seqLen:]) {
		return name[len(name)-seqLen:]
	}
	return ""
}

// items returns the children that are items (names starting with
// prefix), sorted as a queue of kind k takes them.
func sortItems(kids []string, prefix string, k kind) []string {
	out := make([]string, 0, len(kids))
	for _, n := range kids {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	switch k {
	case kindID:
		slices.SortFunc(out, func(a, b string) int {
			_, ca, _ := parseID(a)
			_, cb, _ := parseID(b)
			return cmp.Or(cmp.Compare(ca, cb), cmp.Compare(a, b))
		})
	case kindDelay:
		slices.SortFunc(out, func(a, b string) int {
			return cmp.Or(cmp.Compare(dueOf(a), dueOf(b)), cmp.Compare(seqOf(a), seqOf(b)), cmp.Compare(a, b))
		})
	default:
		slices.Sort(out)
	}
	return out
}
