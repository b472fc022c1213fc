package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// Request operations, the values of the "op" label.
type reqOp uint8

const (
	reqCreate reqOp = iota
	reqDelete
	reqGetData
	reqExists
	reqChildren
	reqSetData
	reqMulti
	reqSync
	reqAddAuth
	numOps
)

// Two kinds of create are counted as op create, with their own reading of
// the server's answer.
const (
	// reqCreateMakingParents is a create whose caller answers a missing
	// parent (NoNode) by creating the parents and trying again: that
	// NoNode is part of a healthy create, counted as no_parent.
	reqCreateMakingParents = numOps + iota
	// reqCreateParent is the create of a missing parent (EnsureContainers):
	// NoNode is counted as no_parent (its own parent is made next), and
	// NodeExists, another client's parent made first, as parent_exists.
	reqCreateParent
)

var opNames = [numOps]string{"create", "delete", "get_data", "exists", "get_children", "set_data", "multi", "sync", "add_auth"}

// Request results, the values of the "result" label.
type reqResult uint8

const (
	resOK reqResult = iota
	resNoParent
	resParentExists
	resConnection
	resNoNode
	resNodeExists
	resBadVersion
	resSessionExpired
	resCtxDone
	resOther
	numResults
)

var resultNames = [numResults]string{"ok", "no_parent", "parent_exists", "connection", "no_node", "node_exists",
	"bad_version", "session_expired", "ctx_done", "other"}

// possibleResults lists, for each op, the results a request of it can
// have: the Client makes the series of these when it is made (a zero
// series, so that a dashboard sees the first one happen), and no other.
// ZooKeeper answers NodeExists only to a create (or a multi), BadVersion
// only to a delete or setData (or a multi), NoNode to neither exists (an
// answer of its own: not there) nor sync nor addAuth; connection,
// session_expired, ctx_done and other (NoAuth, NotEmpty, a closing
// client...) can end any request. Should a request end otherwise all the
// same, its series is made then (countRequest).
var possibleResults = [numOps][]reqResult{
	reqCreate:   {resOK, resNoParent, resParentExists, resConnection, resNoNode, resNodeExists, resSessionExpired, resCtxDone, resOther},
	reqDelete:   {resOK, resConnection, resNoNode, resBadVersion, resSessionExpired, resCtxDone, resOther},
	reqGetData:  {resOK, resConnection, resNoNode, resSessionExpired, resCtxDone, resOther},
	reqExists:   {resOK, resConnection, resSessionExpired, resCtxDone, resOther},
	reqChildren: {resOK, resConnection, resNoNode, resSessionExpired, resCtxDone, resOther},
	reqSetData:  {resOK, resConnection, resNoNode, resBadVersion, resSessionExpired, resCtxDone, resOther},
	reqMulti:    {resOK, resConnection, resNoNode, resNodeExists, resBadVersion, resSessionExpired, resCtxDone, resOther},
	reqSync:     {resOK, resConnection, resSessionExpired, resCtxDone, resOther},
	reqAddAuth:  {resOK, resConnection, resSessionExpired, resCtxDone, resOther},
}

// requestResult returns the series of a request of op that ended with
// err: its "op" row and its result.
func requestResult(op reqOp, err error) (reqOp, reqResult) {
	r := resultOf(err)
	switch op {
	case reqCreateMakingParents:
		op = reqCreate
		if r == resNoNode {
			r = resNoParent
		}
	case reqCreateParent:
		op = reqCreate
		switch r {
		case resNoNode:
			r = resNoParent
		case resNodeExists:
			r = resParentExists
		}
	}
	return op, r
}

func resultOf(err error) reqResult {
	switch {
	case err == nil:
		return resOK
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return resCtxDone
	case errors.Is(err, zk.ErrNoNode):
		return resNoNode
	case errors.Is(err, zk.ErrNodeExists):
		return resNodeExists
	case errors.Is(err, zk.ErrBadVersion):
		return resBadVersion
	case errors.Is(err, zk.ErrSessionExpired):
		return resSessionExpired
	case zkerr.IsRetryable(err):
		return resConnection
	}
	return resOther
}

// Acquisition results, the values of the recipes' "result" label.
const (
	acqHeld = iota
	acqNotAcquired
	acqCtxDone
	acqLost
	acqError
	numAcq
)

var acquireNames = [numAcq]string{"acquired", "not_acquired", "ctx_done", "lost", "error"}

func acquireResult(held bool, err error) int {
	switch {
	case held:
		return acqHeld
	case err == nil || errors.Is(err, zkerr.ErrNotAcquired) || errors.Is(err, zkerr.ErrNotConnected):
		return acqNotAcquired
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return acqCtxDone
	case errors.Is(err, zkerr.ErrSessionLost) || errors.Is(err, zkerr.ErrLockLost) || errors.Is(err, zk.ErrSessionExpired):
		return acqLost
	}
	return acqError
}

// instruments are a Client's bound instruments: those with fixed labels
// made at Connect, those of each recipe path on first use. A Client
// without metrics has none (nil), and every measurement is behind that nil
// check.
type instruments struct {
	m          metric.Sink
	namespace  string                           // the "zk_namespace" label: the namespace without its "/"
	pathLabel  func(recipe, path string) string // nil: the path itself
	states     [zkstate.NumStates]metric.Counter
	suspended  metric.Counter
	requests   [numOps][numResults]metric.Counter // nil for a result its op cannot have
	retries    metric.Counter
	pendingDel metric.Gauge

	mu         sync.RWMutex
	recipes    map[recipeKey]*recipeInstruments
	unexpected map[[2]uint8]metric.Counter // requests series made on first use, outside possibleResults
	unreadable map[unreadableKey]metric.Counter
}

// recipeKey is a recipe path as measured: the recipe's name and its path
// without the namespace, before WithMetricsPathLabel.
type recipeKey struct{ recipe, path string }

// recipeInstruments are the instruments of one recipe path.
type recipeInstruments struct {
	acquires [numAcq]metric.Counter
	wait     metric.Histogram
	hold     metric.Histogram
	queue    metric.Histogram
	held     metric.Gauge
}

func newInstruments(m metric.Sink, namespace string, pathLabel func(recipe, path string) string) *instruments {
	in := &instruments{m: m, namespace: strings.TrimPrefix(namespace, "/"), pathLabel: pathLabel,
		recipes: map[recipeKey]*recipeInstruments{}, unexpected: map[[2]uint8]metric.Counter{},
		unreadable: map[unreadableKey]metric.Counter{}}
	for s := range in.states {
		if zkstate.State(s) != zkstate.StateLatent { // never entered
			in.states[s] = m.Counter(metric.StateChanges, zkstate.State(s).String())
		}
	}
	in.suspended = m.Counter(metric.Suspended)
	for op, results := range possibleResults {
		for _, r := range results {
			in.requests[op][r] = m.Counter(metric.Requests, opNames[op], resultNames[r])
		}
	}
	in.retries = m.Counter(metric.Retries)
	in.pendingDel = m.Gauge(metric.PendingDeletes)
	return in
}

// recipe returns the instruments of the recipe whose driver is d and
// whose contest is under path (without the namespace), making them on
// first use; nil when d's contests are not measured (no Recipe).
func (in *instruments) recipe(d *contend.Driver, path string) *recipeInstruments {
	if d.Recipe == "" {
		return nil
	}
	k := recipeKey{d.Recipe, d.Path}
	if k.path == "" {
		k.path = path
	}
	in.mu.RLock()
	ri := in.recipes[k]
	in.mu.RUnlock()
	if ri != nil {
		return ri
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if ri = in.recipes[k]; ri != nil {
		return ri
	}
	recipe, path := k.recipe, k.path
	if in.pathLabel != nil {
		path = in.pathLabel(recipe, path)
	}
	ns := in.namespace
	ri = &recipeInstruments{
		wait:  in.m.Histogram(metric.Wait, recipe, ns, path),
		hold:  in.m.Histogram(metric.Hold, recipe, ns, path),
		queue: in.m.Histogram(metric.Queue, recipe, ns, path),
		held:  in.m.Gauge(metric.Held, recipe, ns, path),
	}
	for r := range ri.acquires {
		ri.acquires[r] = in.m.Counter(metric.Acquires, recipe, ns, path, acquireNames[r])
	}
	in.recipes[k] = ri
	return ri
}

// countRequest counts a request of op that ended with err. Every method
// of a nil *instruments (no metrics) does nothing.
func (in *instruments) countRequest(op reqOp, err error) {
	if in == nil {
		return
	}
	op, r := requestResult(op, err)
	if ctr := in.requests[op][r]; ctr != nil {
		ctr.Add(1)
		return
	}
	in.unexpectedRequest(op, r).Add(1)
}

// unexpectedRequest returns the series of a result possibleResults does
// not list for op, made on first use.
func (in *instruments) unexpectedRequest(op reqOp, r reqResult) metric.Counter {
	k := [2]uint8{uint8(op), uint8(r)}
	in.mu.Lock()
	defer in.mu.Unlock()
	ctr := in.unexpected[k]
	if ctr == nil {
		ctr = in.m.Counter(metric.Requests, opNames[op], resultNames[r])
		in.unexpected[k] = ctr
	}
	return ctr
}

// countRetry counts a pause before another attempt.
func (in *instruments) countRetry() {
	if in != nil {
		in.retries.Add(1)
	}
}

// addPendingDeletes changes the count of guaranteed deletes in progress.
func (in *instruments) addPendingDeletes(n int64) {
	if in != nil {
		in.pendingDel.Add(float64(n))
	}
}

// stateEntered counts a transition from state from to s; suspendedAt is
// when SUSPENDED was entered.
func (in *instruments) stateEntered(from, s zkstate.State, suspendedAt time.Time) {
	if in == nil {
		return
	}
	if ctr := in.states[s]; ctr != nil {
		ctr.Add(1)
	}
	if from == zkstate.StateSuspended && s != zkstate.StateSuspended && !suspendedAt.IsZero() {
		in.suspended.Add(time.Since(suspendedAt).Seconds())
	}
}

// contestMetrics is what a Contest measures; in is nil without metrics.
// It lives in the Contest, so measuring allocates nothing.
type contestMetrics struct {
	in     *recipeInstruments
	since  time.Time // the wait began
	heldAt time.Time // the hold began; zero when not holding
	queued bool      // the queue length was recorded
}

// contest returns the measurements of a contest of driver d under path
// (without the namespace) whose wait began at since.
func (in *instruments) contest(d *contend.Driver, path string, since time.Time) contestMetrics {
	if in == nil {
		return contestMetrics{}
	}
	return contestMetrics{in: in.recipe(d, path), since: since}
}

// queue records the contenders ahead at the first look.
func (m *contestMetrics) queue(ahead int) {
	if m.in != nil && !m.queued {
		m.queued = true
		m.in.queue.Observe(float64(ahead))
	}
}

// acquired records the outcome of an acquisition.
func (m *contestMetrics) acquired(held bool, err error) {
	if m.in == nil {
		return
	}
	m.in.acquires[acquireResult(held, err)].Add(1)
	if held && m.heldAt.IsZero() {
		now := time.Now()
		m.in.wait.Observe(now.Sub(m.since).Seconds())
		m.in.held.Add(1)
		m.heldAt = now
	}
}

// released records the end of a hold; the next wait begins now.
func (m *contestMetrics) released() {
	if m.in == nil || m.heldAt.IsZero() {
		return
	}
	now := time.Now()
	m.in.hold.Observe(now.Sub(m.heldAt).Seconds())
	m.in.held.Add(-1)
	m.heldAt, m.since = time.Time{}, now
}
