package mutex_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// The uncontended cycle against a real server, ours and the raw requests
// it makes, for allocations and client CPU per op (-benchmem, -cpuprofile).
// Round trips dominate the time; examples/bench compares the two sides in
// interleaved rounds, which is the figure to quote. Lock's create and
// children and Unlock's delete set no watch, so the client's Wire makes
// them itself, from the caller's goroutine, whatever the ctx: it writes
// the request and hands the caller the reply, and the caller waits for
// that or for ctx (go-zookeeper cannot abandon a request in flight, and
// the call must still honour ctx). A cancellable ctx then costs no
// goroutine hand-off, only an AfterFunc on ctx while the request is
// written (see internal/engine/wirecall.go).
//
//	go test -run XXX -bench LockUnlock -benchmem ./mutex/

func BenchmarkLockUnlock(b *testing.B) {
	b.Run("ctx=Background", func(b *testing.B) { benchLockUnlock(b, context.Background()) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("ctx=cancellable", func(b *testing.B) { benchLockUnlock(b, ctx) })
}

func benchLockUnlock(b *testing.B, ctx context.Context) {
	zkc := zktest.Start(b)
	c, err := testutil.Dial(context.Background(), zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	m := newMutex(b, c, "/bench/lockunlock")
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := m.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLockUnlockRawRequests(b *testing.B) {
	zkc := zktest.Start(b)
	conn, _, err := zk.Connect(zkc.Servers(), 4*time.Second, testutil.ZKTLS(zkc.Servers()), zk.WithLogger(quietLogger{}))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/bench", nil, 0, acl); err != nil && err != zk.ErrNodeExists {
		b.Fatal(err)
	}
	if _, err := conn.Create("/bench/raw", nil, 0, acl); err != nil && err != zk.ErrNodeExists {
		b.Fatal(err)
	}
	prefix := "/bench/raw/" + zkpath.ProtectedPrefix + zkpath.NewUUID() + "-" + mutex.LockName
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		node, err := conn.Create(prefix, nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := conn.Children("/bench/raw"); err != nil {
			b.Fatal(err)
		}
		if err := conn.Delete(node, -1); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU reports this process's CPU time (user+system) per op, from
// when it is called to when the function it returns is.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() {
		b.ReportMetric(float64((cpu()-start).Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
