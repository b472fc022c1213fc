package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// TestMetricsOffCostsNothing: without metrics, every measurement point is
// a nil check that allocates nothing.
func TestMetricsOffCostsNothing(t *testing.T) {
	c := &Client{}
	var m contestMetrics
	err := errors.New("x")
	allocs := testing.AllocsPerRun(100, func() {
		c.met.countRequest(reqCreate, err)
		c.met.countRetry()
		c.met.addPendingDeletes(1)
		c.met.addPendingDeletes(-1)
		c.met.stateEntered(c.sm.state, zkstate.StateSuspended, c.sm.suspendedAt)
		m.queue(3)
		m.acquired(true, nil)
		m.released()
	})
	assert.Zero(t, allocs)
}

func TestMetricsResults(t *testing.T) {
	for err, want := range map[error]string{
		nil:                    "ok",
		zk.ErrNoNode:           "no_node",
		zk.ErrNodeExists:       "node_exists",
		zk.ErrBadVersion:       "bad_version",
		zk.ErrSessionExpired:   "session_expired",
		zk.ErrConnectionClosed: "connection",
		errors.New("other"):    "other",
	} {
		assert.Equal(t, want, resultNames[resultOf(err)], "%v", err)
	}
	assert.Equal(t, "ctx_done", resultNames[resultOf(contextErr())])
	assert.Equal(t, "not_acquired", acquireNames[acquireResult(false, zkerr.ErrNotAcquired)])
	assert.Equal(t, "lost", acquireNames[acquireResult(false, zkerr.ErrSessionLost)])
	assert.Equal(t, "acquired", acquireNames[acquireResult(true, nil)])
}

func contextErr() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	return ctx.Err()
}

func TestMetricsCreateResults(t *testing.T) {
	for _, tc := range []struct {
		op     reqOp
		err    error
		result string
	}{
		{reqCreate, zk.ErrNoNode, "no_node"}, // a create whose caller gives up: an error
		{reqCreate, zk.ErrNodeExists, "node_exists"},
		{reqCreateMakingParents, zk.ErrNoNode, "no_parent"}, // the parents are made next
		{reqCreateMakingParents, zk.ErrNodeExists, "node_exists"},
		{reqCreateMakingParents, nil, "ok"},
		{reqCreateParent, zk.ErrNoNode, "no_parent"},
		{reqCreateParent, zk.ErrNodeExists, "parent_exists"}, // another client's, made first
		{reqCreateParent, zk.ErrConnectionClosed, "connection"},
		{reqDelete, zk.ErrNoNode, "no_node"},
	} {
		op, r := requestResult(tc.op, tc.err)
		assert.Equal(t, tc.result, resultNames[r], "%v %v", tc.op, tc.err)
		if tc.op != reqDelete {
			assert.Equal(t, "create", opNames[op])
		}
	}
}

// countingMetrics counts the series it is asked for, by "name{labels}".
type countingMetrics struct {
	made   map[string]int
	values map[string]*countingSeries
}

type countingSeries struct{ v float64 }

func (s *countingSeries) Add(d float64)     { s.v += d }
func (s *countingSeries) Observe(v float64) { s.v += v }

func (m *countingMetrics) series(mt metric.Metric, lv []string) *countingSeries {
	key := mt.Name + "{" + strings.Join(lv, ",") + "}"
	m.made[key]++
	if m.values[key] == nil {
		m.values[key] = &countingSeries{}
	}
	return m.values[key]
}

func (m *countingMetrics) Counter(mt metric.Metric, lv ...string) metric.Counter {
	return m.series(mt, lv)
}
func (m *countingMetrics) Gauge(mt metric.Metric, lv ...string) metric.Gauge { return m.series(mt, lv) }
func (m *countingMetrics) Histogram(mt metric.Metric, lv ...string) metric.Histogram {
	return m.series(mt, lv)
}

// TestMetricsUnexpectedResult: a result possibleResults does not list
// for an op is still counted, in a series made on first use, once.
func TestMetricsUnexpectedResult(t *testing.T) {
	m := &countingMetrics{made: map[string]int{}, values: map[string]*countingSeries{}}
	c := &Client{met: newInstruments(m, "", nil)}
	const key = "zkrecipes.requests{sync,no_node}"
	assert.Zero(t, m.made[key], "not made up front")
	c.met.countRequest(reqSync, zk.ErrNoNode)
	c.met.countRequest(reqSync, zk.ErrNoNode)
	assert.Equal(t, 1, m.made[key])
	assert.Equal(t, 2.0, m.values[key].v)
	c.met.countRequest(reqSync, nil)
	assert.Equal(t, 1.0, m.values["zkrecipes.requests{sync,ok}"].v)
}

// TestMetricsOnAllocatesNothing: with metrics on, counting a request
// (of every op and result the table expects) allocates nothing.
func TestMetricsOnAllocatesNothing(t *testing.T) {
	m := &countingMetrics{made: map[string]int{}, values: map[string]*countingSeries{}}
	c := &Client{met: newInstruments(m, "app", nil)}
	allocs := testing.AllocsPerRun(100, func() {
		c.met.countRequest(reqCreate, nil)
		c.met.countRequest(reqCreateMakingParents, zk.ErrNoNode)
		c.met.countRequest(reqCreateParent, zk.ErrNodeExists)
		c.met.countRequest(reqGetData, zk.ErrNoNode)
		c.met.countRetry()
	})
	assert.Zero(t, allocs)
}
