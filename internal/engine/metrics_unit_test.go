package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// TestMetricsOffCostsNothing: without metrics, every measurement point is
// a nil check that allocates nothing.
func TestMetricsOffCostsNothing(t *testing.T) {
	c := &Client{}
	var m contestMetrics
	err := errors.New("x")
	allocs := testing.AllocsPerRun(100, func() {
		c.countRequest(reqCreate, err)
		c.countRetry()
		c.addPendingDeletes(1)
		c.addPendingDeletes(-1)
		c.stateEntered(StateSuspended)
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
	assert.Equal(t, "not_acquired", acquireNames[acquireResult(false, ErrNotAcquired)])
	assert.Equal(t, "lost", acquireNames[acquireResult(false, ErrSessionLost)])
	assert.Equal(t, "acquired", acquireNames[acquireResult(true, nil)])
}

func contextErr() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	return ctx.Err()
}
