package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// maxData is how many bytes of a node's data the table shows.
const maxData = 40

var kindLabels = map[string]string{
	kindMutex:       "mutex (InterProcessMutex, LeaderSelector, zk.Lock or Kazoo Lock)",
	kindRWLock:      "read/write lock",
	kindSemaphore:   "semaphore (InterProcessSemaphoreV2)",
	kindLatch:       "leader latch",
	kindEmpty:       "empty",
	kindData:        "data node",
	kindLeases:      "a semaphore's leases",
	kindUnknown:     "unknown (not a queue zkinspect knows)",
	kindDouble:      "double barrier (DistributedDoubleBarrier)",
	kindQueue:       "work queue (DistributedQueue family)",
	kindSimpleQueue: "work queue (SimpleDistributedQueue, ZooKeeper's contrib queue)",
	kindGroup:       "group (GroupMember)",
	kindTTL:         "TTL node (PersistentTtlNode)",
	kindService:     "service (curator-x-discovery)",
	kindQueueLock:   "a queue's lock directory (DistributedQueue lockPath)",
	kindSemaphoreV1: "semaphore v1 (InterProcessSemaphore; told by -v1)",
	kindSharder:     "queue sharder (QueueSharder)",
}

var roleLabels = map[string]string{
	roleHolder:    "HOLDS",
	roleLeader:    "LEADS",
	roleWaiter:    "waits",
	roleAcquiring: "acquiring",
	roleUnknown:   "HOLDS?",
	roleNone:      "?",
	roleEntered:   "IN",
	roleItem:      "item",
	roleMember:    "MEMBER",
	roleTouch:     "TOUCH",
	roleMarker:    "marker",
	roleShard:     "shard",
}

var counterLabels = map[string]string{
	"int":  "4 bytes, as SharedCount, DistributedAtomicInteger, atomicval.Int32 or Kazoo's Counter(support_curator) hold it",
	"long": "8 bytes, as DistributedAtomicLong and atomicval.Int64 hold it",
}

var libraryLabels = map[string]string{
	libCurator: "curator-compatible (Curator or zkrecipes)",
	libZKLock:  "go-zookeeper zk.Lock",
	libKazoo:   "kazoo",
	libUnknown: "unknown",
}

// render writes rep as text or JSON; compact puts a JSON document on one
// line (for -watch).
func render(w io.Writer, rep *Report, asJSON, compact bool) error {
	if asJSON {
		return writeJSON(w, rep, compact)
	}
	var b strings.Builder
	if rep.Namespace != "" {
		fmt.Fprintf(&b, "namespace %s: paths are inside it\n", rep.Namespace)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	switch {
	case rep.Discovery != nil:
		renderDiscovery(&b, rep.Discovery)
	case rep.Queue != nil:
		renderQueue(&b, rep.Queue)
	default:
		renderSummary(&b, rep)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeJSON writes v as one JSON document and a newline, indented unless
// compact, without escaping <, > and & (node data is shown as it is).
func writeJSON(w io.Writer, v any, compact bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if !compact {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func renderQueue(b *strings.Builder, q *Queue) {
	fmt.Fprintf(b, "%s: %s\n", q.Path, kindLabels[q.Kind])
	status := fmt.Sprintf("%d holding", q.Holders)
	if q.Kind == kindLatch {
		status = fmt.Sprintf("%d leading", q.Holders)
	}
	if q.Kind == kindSemaphore || q.Kind == kindSemaphoreV1 {
		max := "unknown"
		if q.MaxLeases != nil {
			max = strconv.Itoa(*q.MaxLeases)
		}
		status = fmt.Sprintf("%s held (max %s)", counted(q.Holders, "lease"), max)
	}
	if q.Kind == kindDouble {
		ready := "no"
		if q.Ready != nil && *q.Ready {
			ready = "yes"
		}
		status = fmt.Sprintf("%s, ready: %s; %d entered", counted(len(q.Nodes), "member"), ready, q.Holders)
	}
	if q.Kind == kindGroup {
		status = counted(len(q.Nodes), "member")
	}
	if q.Kind == kindQueueLock {
		status = counted(q.Holders, "item") + " locked by a consumer"
	}
	if q.Kind == kindTTL {
		status = "touched"
		if q.LastTouchMS != nil {
			status = "last touch " + formatAge(time.Duration(*q.LastTouchMS)*time.Millisecond) + " ago"
		}
	}
	if q.Undecided > 0 {
		status += fmt.Sprintf(", %d holding or waiting", q.Undecided)
	}
	if q.Kind != kindGroup && q.Kind != kindTTL && q.Kind != kindQueueLock {
		status += fmt.Sprintf(", %d waiting", q.Waiters)
	}
	if q.OldestWaiterAgeMS != nil {
		status += ", oldest waiting " + formatAge(time.Duration(*q.OldestWaiterAgeMS)*time.Millisecond)
	}
	if q.Depth != nil {
		status = fmt.Sprintf("%d items", *q.Depth)
		if *q.Depth > 0 && q.OldestItemAgeMS != nil {
			status += ", oldest " + formatAge(time.Duration(*q.OldestItemAgeMS)*time.Millisecond)
		}
	}
	switch q.Kind {
	case kindEmpty, kindData, kindUnknown:
	default:
		fmt.Fprintf(b, "status: %s\n", status)
	}
	if c := q.Counter; c != nil {
		fmt.Fprintf(b, "counter: %d (%s: %s)\n", c.Value, c.Type, counterLabels[c.Type])
	}
	switch q.Kind {
	case kindEmpty, kindData:
	case kindDouble:
		renderNodes(b, q.Nodes, false, "no members")
	case kindSemaphore:
		fmt.Fprintf(b, "leases (%s):\n", zkpath.JoinPath(q.Path, semaphore.LeaseParent))
		renderNodes(b, q.Nodes, false, "no leases")
		fmt.Fprintf(b, "internal lock (%s):\n", zkpath.JoinPath(q.Path, semaphore.LockParent))
		renderNodes(b, q.InternalLock, false, "nobody acquiring")
	case kindQueue, kindSimpleQueue:
		renderNodes(b, q.Nodes, false, "no items")
	case kindSharder:
		renderNodes(b, q.Nodes, false, "no shards")
	default:
		renderNodes(b, q.Nodes, q.Kind == kindRWLock, "no contenders")
	}
	for _, n := range q.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
}

func renderNodes(b *strings.Builder, nodes []Node, lockColumn bool, none string) {
	if len(nodes) == 0 {
		fmt.Fprintf(b, "  (%s)\n", none)
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	lock := ""
	if lockColumn {
		lock = "LOCK\t"
	}
	fmt.Fprintf(tw, "  POS\tROLE\t%sNODE\tSESSION\t%6s\tLIBRARY\tDATA\n", lock, "AGE")
	for _, n := range nodes {
		if lockColumn {
			lock = n.Lock + "\t"
		}
		session := n.Session
		if session == "" {
			session = "persistent"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s%s\t%s\t%6s\t%s\t%s\n", n.Position, roleLabels[n.Role], lock, n.Name,
			session, formatAge(n.age), libraryLabels[n.Library], formatData(n.raw))
	}
	tw.Flush()
}

// summaryHeader writes a summary's first line: what it found, each kind
// counted as its recipe counts it. Lock paths (mutexes, read/write locks,
// semaphores, latches, leases, empty paths) and how many are held; double
// barriers; groups and their members; work queues and their items; queue
// lock directories and the items locked; TTL nodes; discovery services
// and their instances; unknown nodes; data nodes by what they hold.
func summaryHeader(b *strings.Builder, rep *Report) {
	var t tallies
	for _, l := range rep.Locks {
		t.add(l)
	}
	var parts []string
	add := func(n int, s string) {
		if n > 0 {
			parts = append(parts, s)
		}
	}
	add(t.locks, fmt.Sprintf("%s, %d held", plural(t.locks, "lock path", "lock paths"), t.held))
	add(t.doubles, plural(t.doubles, "double barrier", "double barriers"))
	add(t.groups, fmt.Sprintf("%s (%s)", plural(t.groups, "group", "groups"), counted(t.members, "member")))
	add(t.queues, fmt.Sprintf("%s (%s)", plural(t.queues, "work queue", "work queues"), counted(t.items, "item")))
	add(t.lockDirs, fmt.Sprintf("%s (%s locked)", plural(t.lockDirs, "queue lock directory", "queue lock directories"), counted(t.locked, "item")))
	add(t.ttls, plural(t.ttls, "TTL node", "TTL nodes"))
	add(t.services, fmt.Sprintf("%s (%s)", counted(t.services, "discovery service"), instances(t.readable, t.unreadable)))
	add(t.unknown, fmt.Sprintf("%d unknown (not a queue zkinspect knows)", t.unknown))
	if rep.DataNodes > 0 {
		var of []string
		for _, k := range []struct {
			n         int
			one, many string
		}{{t.counters, "counter", "counters"}, {t.barriers, "barrier", "barriers"}, {t.plain, "plain", "plain"}} {
			if k.n > 0 {
				of = append(of, plural(k.n, k.one, k.many))
			}
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", counted(rep.DataNodes, "data node"), strings.Join(of, ", ")))
	}
	if len(parts) == 0 {
		parts = append(parts, "0 lock paths, 0 held")
	}
	fmt.Fprintf(b, "%s: %s\n", rep.Path, strings.Join(parts, ", "))
}

// tallies are a summary's counts by kind.
type tallies struct {
	locks, held, doubles, groups, members, queues, items, lockDirs, locked, ttls int
	services, readable, unreadable, unknown, counters, barriers, plain           int
}

func (t *tallies) add(l LockSummary) {
	switch l.Kind {
	case kindCounter:
		t.counters++
	case kindBarrier:
		t.barriers++
	case kindData:
		t.plain++
	case kindUnknown:
		t.unknown++
	case kindService:
		t.services, t.readable, t.unreadable = t.services+1, t.readable+l.Holders, t.unreadable+l.Unreadable
	case kindDouble:
		t.doubles++
	case kindGroup:
		t.groups, t.members = t.groups+1, t.members+l.Holders
	case kindQueue, kindSimpleQueue:
		t.queues++
		if l.Depth != nil {
			t.items += *l.Depth
		}
	case kindQueueLock:
		t.lockDirs, t.locked = t.lockDirs+1, t.locked+l.Holders
	case kindTTL:
		t.ttls++
	default: // the lock family, and empty paths
		t.locks++
		if l.Held != nil && *l.Held {
			t.held++
		}
	}
}

// plural says n of a noun with its plural.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// isDataKind reports whether a summary line of kind is a data node's.
func isDataKind(kind string) bool {
	return kind == kindData || kind == kindCounter || kind == kindBarrier
}

// dataState is a data node's STATE in a summary: a counter's type and
// value, a barrier's "up?" (it could be one), plain data's size.
func dataState(l LockSummary) string {
	switch {
	case l.Counter != nil:
		return fmt.Sprintf("%s %d", l.Counter.Type, l.Counter.Value)
	case l.Kind == kindBarrier:
		return "up?"
	case l.Bytes != nil:
		return counted(*l.Bytes, "byte")
	}
	return "-"
}

func renderSummary(b *strings.Builder, rep *Report) {
	summaryHeader(b, rep)
	defer func() {
		for _, l := range rep.Locks {
			if l.Kind == kindUnknown && l.Why != "" {
				fmt.Fprintf(b, "unknown %s: %s\n", l.Path, l.Why)
			}
		}
		for _, s := range rep.Skipped {
			fmt.Fprintf(b, "skipped %s: %s\n", s.Path, s.Reason)
		}
	}()
	if len(rep.Locks) == 0 {
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  PATH\tKIND\tSTATE\tHOLDERS\tWAITERS\t%13s\n", "OLDEST WAITER")
	for _, l := range rep.Locks {
		state, holders, waiters := "free", strconv.Itoa(l.Holders), strconv.Itoa(l.Waiters)
		switch {
		case isDataKind(l.Kind):
			state, holders, waiters = dataState(l), "-", "-"
		case l.Held == nil:
			state, holders, waiters = "?", "?", "?"
			if l.Undecided > 0 {
				holders = fmt.Sprintf("%d?", l.Undecided)
			}
		case l.Kind == kindGroup:
			state, waiters = "members", "-"
		case l.Kind == kindQueueLock:
			state, waiters = "locked", "-"
		case l.Kind == kindService:
			state, waiters = "instances", "-"
			if l.Unreadable > 0 {
				state += fmt.Sprintf(", %d unreadable", l.Unreadable)
			}
		case l.Kind == kindTTL:
			state, waiters = "touched", "-"
		case l.Kind == kindDouble && *l.Held:
			state = "ready"
		case l.Kind == kindDouble:
			state = "waiting"
		case *l.Held:
			state = "held"
		}
		if l.Held != nil && l.Undecided > 0 { // a semaphore's newest lease, its maximum unknown
			holders = fmt.Sprintf("%d+%d?", l.Holders, l.Undecided)
		}
		oldest := "-"
		if l.OldestWaiterAgeMS != nil {
			oldest = formatAge(time.Duration(*l.OldestWaiterAgeMS) * time.Millisecond)
		}
		if l.Depth != nil { // a work queue: its items wait
			state, holders, waiters = "queue", "-", strconv.Itoa(*l.Depth)
			if *l.Depth > 0 && l.OldestItemAgeMS != nil {
				oldest = formatAge(time.Duration(*l.OldestItemAgeMS) * time.Millisecond)
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%7s\t%7s\t%13s\n", l.Path, l.Kind, state, holders, waiters, oldest)
	}
	tw.Flush()
}

// formatAge gives a short age: 0.0s-9.9s, 10s-59s, 1m00s-59m59s,
// 1h00m-23h59m, then days and hours.
func formatAge(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", float64(d.Milliseconds()/100)/10)
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// formatData quotes data with Go escapes, cut to maxData bytes.
func formatData(data []byte) string {
	if len(data) <= maxData {
		return strconv.Quote(string(data))
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(string(data[:maxData])), len(data))
}
