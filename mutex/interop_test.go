package mutex_test

// Interop tests: the Go Mutex contends for the same path as real Apache
// Curator (Java) and real Kazoo (Python) processes, driven through
// internal/interop, against the same ZooKeeper server.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// interopLib is one foreign lock library.
type interopLib struct {
	name  string
	start func(ctx context.Context, dir string, args ...string) (*interop.Proc, error)
	// marker is what the library's own lock nodes contain.
	marker string
	// opts make the Go Mutex recognise the library's nodes.
	opts []mutex.Option
}

// run starts the library's driver in mode args[0]; the process is killed
// at the end of the test. A missing dependency skips the test.
func (lib interopLib) run(t *testing.T, ctx context.Context, dir string, args ...string) *interop.Proc {
	t.Helper()
	p, err := lib.start(ctx, dir, args...)
	if errors.Is(err, interop.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

func TestCuratorInterop(t *testing.T) {
	if _, err := interop.JavaClasspath(); errors.Is(err, interop.ErrUnavailable) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	testInterop(t, interopLib{name: "curator", start: interop.StartCurator, marker: "-lock-"})
}

func TestKazooInterop(t *testing.T) {
	if err := interop.KazooAvailable(); errors.Is(err, interop.ErrUnavailable) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	testInterop(t, interopLib{
		name: "kazoo", start: interop.StartKazoo, marker: "__lock__",
		opts: []mutex.Option{mutex.WithExtraLockNames(mutex.KazooLockName)},
	})
}

func testInterop(t *testing.T, lib interopLib) {
	// Plain even under ZK_TEST_TLS: the Curator and Kazoo programs speak
	// plain ZooKeeper.
	zkc := zktest.Start(t, zktest.WithoutTLS())
	dir := t.TempDir() // the driver program is written here once
	t.Run("MutualExclusion", func(t *testing.T) { interopMutualExclusion(t, zkc, dir, lib) })
	t.Run("QueueOrder", func(t *testing.T) { interopQueueOrder(t, zkc, dir, lib) })
}

// interopMutualExclusion runs 2 foreign contender processes and 4 Go
// goroutines (one Client, one Mutex) on one path, released together, and
// checks that no two holds overlap in time, across languages.
func interopMutualExclusion(t *testing.T, zkc *zktest.Cluster, dir string, lib interopLib) {
	const (
		libProcs  = 2
		libIters  = 15
		goWorkers = 4
		goIters   = 15
		hold      = 5 * time.Millisecond
	)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	path := fmt.Sprintf("/interop/%s-mutex-%s", lib.name, uuid.NewString()[:8])
	outDir := t.TempDir()

	procs := make([]*interop.Proc, libProcs)
	files := make([]string, libProcs)
	for i := range procs {
		files[i] = filepath.Join(outDir, fmt.Sprintf("%s%d.txt", lib.name, i))
		procs[i] = lib.run(t, ctx, dir, "mutex", zkc.ConnectString(), path,
			strconv.Itoa(libIters), files[i], strconv.Itoa(int(hold.Milliseconds())))
	}
	for _, p := range procs {
		if err := p.WaitLine(ctx, "READY"); err != nil {
			t.Fatal(err)
		}
	}
	c := procConnect(t, zkc.Servers())
	m := procNewMutex(t, c, path, lib.opts...)

	start := time.Now()
	for _, p := range procs {
		if err := p.Send("GO"); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu     sync.Mutex
		goHeld []interop.Interval
		wg     sync.WaitGroup
	)
	for g := range goWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range goIters {
				lease, err := m.Acquire(ctx)
				if err != nil {
					t.Errorf("go%d iteration %d: lock: %v", g, i, err)
					return
				}
				s := time.Now().UnixNano()
				time.Sleep(hold)
				select {
				case <-lease.Done():
					t.Errorf("go%d iteration %d: hold may have been lost", g, i)
				default:
				}
				e := time.Now().UnixNano()
				if err := m.Release(ctx); err != nil {
					t.Errorf("go%d iteration %d: unlock: %v", g, i, err)
					return
				}
				mu.Lock()
				goHeld = append(goHeld, interop.Interval{Start: s, End: e, Who: fmt.Sprintf("go%d", g)})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)

	if len(goHeld) != goWorkers*goIters {
		t.Errorf("Go completed %d holds, want %d", len(goHeld), goWorkers*goIters)
	}
	all := append([]interop.Interval(nil), goHeld...)
	for i, f := range files {
		iv, err := interop.ReadIntervals(f, fmt.Sprintf("%s%d", lib.name, i))
		if err != nil {
			t.Fatal(err)
		}
		if len(iv) != libIters {
			t.Errorf("%s%d completed %d holds, want %d", lib.name, i, len(iv), libIters)
		}
		all = append(all, iv...)
	}
	if err := interop.CheckNoOverlap(all); err != nil { // sorts all by start
		t.Error(err)
	}
	handOffs, crossLang := 0, 0
	for i := 1; i < len(all); i++ {
		if all[i].Who != all[i-1].Who {
			handOffs++
		}
		if strings.HasPrefix(all[i].Who, "go") != strings.HasPrefix(all[i-1].Who, "go") {
			crossLang++
		}
	}
	span := time.Duration(all[len(all)-1].End - all[0].Start)
	t.Logf("%d holds (Go %d, %s %d×%d) in %v after GO (holds span %v: %.0f holds/s, hold %v); %d hand-offs, %d between Go and %s",
		len(all), len(goHeld), lib.name, libProcs, libIters, elapsed.Round(time.Millisecond),
		span.Round(time.Millisecond), float64(len(all))/span.Seconds(), hold, handOffs, crossLang, lib.name)
	if crossLang == 0 {
		t.Errorf("the lock never passed between Go and %s", lib.name)
	}
}

// interopQueueOrder builds the queue
//
//	go0 (holds), go1, go2, <foreign holder>, go3
//
// and checks that the foreign library lists the contenders in the order Go
// does, and that the lock then goes exactly in that order: the foreign
// holder does not acquire while any Go owner ahead of it holds, and the Go
// owner behind it waits for it.
func interopQueueOrder(t *testing.T, zkc *zktest.Cluster, dir string, lib interopLib) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	path := fmt.Sprintf("/interop/%s-queue-%s", lib.name, uuid.NewString()[:8])
	c := procConnect(t, zkc.Servers())
	m := procNewMutex(t, c, path, lib.opts...)

	// Go owners are explicit, so the test goroutine can unlock for them.
	type goOwner struct {
		name  string
		ctx   context.Context
		lease chan *mutex.Lease // receives the lease when acquired
	}
	var owners []*goOwner
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel() // stops blocked Locks if the test ends early
	queue := func(name string) *goOwner {
		o := &goOwner{name: name, ctx: mutex.WithOwner(ctx, name), lease: make(chan *mutex.Lease, 1)}
		owners = append(owners, o)
		bg.Add(1)
		go func() {
			defer bg.Done()
			l, err := m.Acquire(o.ctx)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("%s: lock: %v", name, err)
				}
				return
			}
			o.lease <- l
		}()
		return o
	}
	holds := func(o *goOwner) *mutex.Lease {
		t.Helper()
		select {
		case l := <-o.lease:
			return l
		case <-ctx.Done():
			t.Fatalf("%s did not acquire: %v", o.name, ctx.Err())
			return nil
		}
	}
	notYet := func(list ...*goOwner) {
		t.Helper()
		for _, o := range list {
			select {
			case <-o.lease:
				t.Fatalf("%s acquired out of turn", o.name)
			default:
			}
		}
	}
	printed := func(p *interop.Proc, line string) bool {
		return slices.Contains(p.Lines(), line)
	}

	go0 := queue("go0")
	l0 := holds(go0)
	procWaitParticipants(ctx, t, m, 1)
	go1 := queue("go1")
	procWaitParticipants(ctx, t, m, 2)
	go2 := queue("go2")
	procWaitParticipants(ctx, t, m, 3)

	holder := lib.run(t, ctx, dir, "holder", zkc.ConnectString(), path)
	ps := procWaitParticipants(ctx, t, m, 4)
	libNode := ps[3]
	if !strings.Contains(filepath.Base(libNode.Node), lib.marker) {
		t.Fatalf("4th contender %s is not a %s node; queue %v", filepath.Base(libNode.Node), lib.name, ps)
	}
	if ps[0].Node != l0.Node() {
		t.Fatalf("queue head %s, want go0's %s", ps[0].Node, l0.Node())
	}
	go3 := queue("go3")
	ps = procWaitParticipants(ctx, t, m, 5)

	// The foreign library's view of the mixed queue.
	lister := lib.run(t, ctx, dir, "participants", zkc.ConnectString(), path)
	if err := lister.Wait(); err != nil {
		t.Fatal(err)
	}
	var theirs []string
	for _, l := range lister.Lines() {
		if l = strings.TrimSpace(l); l != "" {
			theirs = append(theirs, l)
		}
	}
	ours := make([]string, len(ps))
	for i, p := range ps {
		ours[i] = p.Node
	}
	if !slices.Equal(theirs, ours) {
		t.Fatalf("%s lists the contenders as\n\t%s\nGo as\n\t%s", lib.name,
			strings.Join(theirs, "\n\t"), strings.Join(ours, "\n\t"))
	}
	t.Logf("%s and Go agree on the queue: %s", lib.name, strings.Join(ours, " "))

	// Hand the lock down the queue.
	if printed(holder, "ACQUIRED") {
		t.Fatalf("%s acquired while go0 held the lock", lib.name)
	}
	notYet(go1, go2, go3)
	unlock := func(o *goOwner) {
		t.Helper()
		if err := m.Release(o.ctx); err != nil {
			t.Fatalf("%s: unlock: %v", o.name, err)
		}
	}
	unlock(go0)
	if l := holds(go1); l.Node() != ps[1].Node {
		t.Errorf("go1 holds with %s, want %s", l.Node(), ps[1].Node)
	}
	notYet(go2, go3)
	if printed(holder, "ACQUIRED") {
		t.Fatalf("%s acquired while go1 held the lock", lib.name)
	}
	unlock(go1)
	if l := holds(go2); l.Node() != ps[2].Node {
		t.Errorf("go2 holds with %s, want %s", l.Node(), ps[2].Node)
	}
	notYet(go3)
	if printed(holder, "ACQUIRED") {
		t.Fatalf("%s acquired while go2 held the lock", lib.name)
	}
	unlock(go2)
	if err := holder.WaitLine(ctx, "ACQUIRED"); err != nil {
		t.Fatal(err)
	}
	if hp, err := m.Holder(ctx); err != nil || hp.Node != libNode.Node {
		t.Errorf("Holder() = %v, %v; want %s's %s", hp, err, lib.name, libNode.Node)
	}
	notYet(go3)
	if err := holder.Send("release"); err != nil {
		t.Fatal(err)
	}
	if err := holder.WaitLine(ctx, "RELEASED"); err != nil {
		t.Fatal(err)
	}
	if l := holds(go3); l.Node() != ps[4].Node {
		t.Errorf("go3 holds with %s, want %s", l.Node(), ps[4].Node)
	}
	unlock(go3)
	if err := holder.Wait(); err != nil {
		t.Error(err)
	}
	if ps, err := m.Participants(ctx); err != nil || len(ps) != 0 {
		t.Errorf("participants after all released = %v, %v; want none", ps, err)
	}
}
