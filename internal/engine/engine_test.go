package engine_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// isWriter tells a write node, for a minimal read/write lock on the
// engine, the way the rwlock recipe builds one.
func isWriter(c contend.Contender) bool { return strings.Contains(c.Name, "__WRIT__") }

var (
	writerDriver = &contend.Driver{Names: []string{"__READ__", "__WRIT__"}, Relist: isWriter}
	readerDriver = &contend.Driver{Names: []string{"__READ__", "__WRIT__"}, Blocks: isWriter, Relist: isWriter}
)

// The engine's extension points: a node at a given sequence and granted
// where it is made (the rwlock downgrade), Blocks and Relist.
func TestEngineFixedSequenceGrantedAndBlocks(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	writer := writerDriver
	w, err := (*engine.Client)(c).Enter(ctx, "/rw", "__WRIT__", nil, writer)
	require.NoError(t, err)
	held, _, err := w.Acquire(ctx, true)
	require.NoError(t, err)
	require.True(t, held)
	seq := w.Node().Key

	// The write lock's owner asks for the read lock: a non-sequential node
	// at the writer's sequence, granted where it is made.
	down, err := (*engine.Client)(c).Enter(ctx, "/rw", "__READ__", nil, readerDriver, engine.EnterAtSequence(seq), engine.EnterGranted())
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(down.Path(), "-__READ__"+seq), down.Path())
	assert.Equal(t, seq, down.Node().Key, "sorts where the write node is")
	held, _, err = down.Acquire(ctx, false)
	require.NoError(t, err)
	assert.True(t, held)

	// Another reader waits for the writer; when the writer leaves it
	// lists again (Relist) and holds beside the downgraded reader.
	r, err := (*engine.Client)(c).Enter(ctx, "/rw", "__READ__", nil, readerDriver)
	require.NoError(t, err)
	watches := (*engine.Client)(c).Stats().Watches
	got := make(chan error, 1)
	go func() {
		held, _, err := r.Acquire(ctx, true)
		if err == nil && !held {
			err = errors.New("not held")
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "the reader watches the writer", func() bool {
		return (*engine.Client)(c).Stats().Watches > watches
	})
	select {
	case err := <-got:
		t.Fatalf("reader held while the writer holds: %v", err)
	default:
	}
	before := (*engine.Client)(c).Stats()
	require.NoError(t, w.Leave(ctx))
	require.NoError(t, <-got)
	assert.Equal(t, uint64(1), (*engine.Client)(c).Stats().Sub(before).Children, "one list after the writer went")

	// A writer queued behind all of them waits for the downgraded reader.
	w2, err := (*engine.Client)(c).Enter(ctx, "/rw", "__WRIT__", nil, writer)
	require.NoError(t, err)
	held, _, err = w2.Acquire(ctx, false)
	require.NoError(t, err)
	assert.False(t, held, "the downgraded reader and the reader still hold")
	require.NoError(t, down.Leave(ctx))
	require.NoError(t, r.Leave(ctx))
}

// The semaphore's count-based wait: only the caller waits, on a children
// watch, woken by a lease going or the maximum changing.
func TestAwaitCount(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	d := &contend.Driver{Names: []string{"lease-"}}
	var cts []*engine.Contest
	for i := 0; i < 3; i++ {
		ct, err := (*engine.Client)(c).Enter(ctx, "/sem/leases", "lease-", nil, d)
		require.NoError(t, err)
		cts = append(cts, ct)
	}
	ours := cts[2]

	sig, err := ours.AwaitCount(ctx, engine.FixedLimit(3), true)
	require.NoError(t, err)
	assert.False(t, notify.IsClosed(sig.Done))
	_, err = ours.AwaitCount(ctx, engine.FixedLimit(2), false)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired, "one check, too many")

	// Too many: a lease going wakes the waiter.
	done := make(chan error, 1)
	watches := (*engine.Client)(c).Stats().Watches
	go func() { _, err := ours.AwaitCount(ctx, engine.FixedLimit(2), true); done <- err }()
	eventually(t, 5*time.Second, "waiter watching", func() bool { return (*engine.Client)(c).Stats().Watches > watches })
	select {
	case err := <-done:
		t.Fatalf("returned with 3 leases of 2: %v", err)
	default:
	}
	require.NoError(t, cts[0].Leave(ctx))
	require.NoError(t, <-done)

	// The maximum changing wakes the waiter.
	var mu sync.Mutex
	max, changed := 1, make(chan struct{})
	limit := func() (int, <-chan struct{}) {
		mu.Lock()
		defer mu.Unlock()
		return max, changed
	}
	watches = (*engine.Client)(c).Stats().Watches
	go func() { _, err := ours.AwaitCount(ctx, limit, true); done <- err }()
	eventually(t, 5*time.Second, "waiter watching", func() bool { return (*engine.Client)(c).Stats().Watches > watches })
	mu.Lock()
	max = 2
	close(changed)
	changed = make(chan struct{})
	mu.Unlock()
	require.NoError(t, <-done)

	// A ghost of ours is deleted, not counted.
	ghost := "/sem/leases/" + prefixOf(t, ours.Path()) + "lease-0000000000"
	_, err = c.Create(ctx, ghost, nil, zk.FlagEphemeral)
	require.NoError(t, err)
	_, err = ours.AwaitCount(ctx, engine.FixedLimit(2), false)
	require.NoError(t, err, "two leases, the ghost aside")
	ok, _, err := c.Exists(ctx, ghost)
	require.NoError(t, err)
	assert.False(t, ok)

	// Our lease gone: an error, not a wait.
	require.NoError(t, c.Delete(ctx, ours.Path(), -1))
	_, err = ours.AwaitCount(ctx, engine.FixedLimit(5), true)
	assert.ErrorIs(t, err, recipes.ErrLockLost)
	require.NoError(t, ours.Leave(ctx))

	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	late, err := (*engine.Client)(c).Enter(ctx, "/sem/leases", "lease-", nil, d)
	require.NoError(t, err)
	_, err = late.AwaitCount(tctx, engine.FixedLimit(1), true)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, late.Leave(ctx))
	require.NoError(t, cts[1].Leave(ctx))
}

// termLog records a participant's terms.
type termLog struct {
	mu    sync.Mutex
	terms []*engine.Hold
	nodes []string
}

func (l *termLog) onTerm(h *engine.Hold) {
	l.mu.Lock()
	l.terms = append(l.terms, h)
	l.mu.Unlock()
}

func (l *termLog) onNode(p string) {
	l.mu.Lock()
	l.nodes = append(l.nodes, p)
	l.mu.Unlock()
}

func (l *termLog) count() (terms, nodes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.terms), len(l.nodes)
}

func (l *termLog) last() *engine.Hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.terms[len(l.terms)-1]
}

func participate(t *testing.T, c *recipes.Client, parent string) (*termLog, func()) {
	l := &termLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (*engine.Client)(c).Participate(ctx, engine.Participation{
			Parent: parent, LockName: "latch-", Data: []byte("id"),
			Driver:  &contend.Driver{Names: []string{"latch-"}},
			Options: []engine.EnterOption{engine.EnterVerifyOwner()},
			OnNode:  l.onNode, OnTerm: l.onTerm,
		})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.ErrorIs(t, err, context.Canceled)
			case <-time.After(10 * time.Second):
				buf := make([]byte, 1<<20)
				t.Errorf("Participate did not return\n%s", buf[:runtime.Stack(buf, true)])
			}
		})
	}
	t.Cleanup(stop)
	return l, stop
}

// A long-lived participant: terms with fresh signals, its node recreated
// when deleted (also with the whole path), a new term after a connection
// blip under the Standard policy.
func TestParticipantTermsAndRecreation(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	a := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	b := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())

	la, _ := participate(t, a, "/latch")
	eventually(t, 5*time.Second, "a leads", func() bool { n, _ := la.count(); return n == 1 })
	lb, stopB := participate(t, b, "/latch")
	eventually(t, 5*time.Second, "b queued", func() bool { _, n := lb.count(); return n == 1 })
	first := la.last()
	tok, err := first.Token(context.Background())
	require.NoError(t, err)

	// Someone deletes a's node: a's term ends, b leads, a queues again.
	require.NoError(t, admin.Delete(context.Background(), first.Node(), -1))
	eventually(t, 5*time.Second, "b leads", func() bool { n, _ := lb.count(); return n == 1 })
	assertClosedWithin(t, first.Done(), "a's term ended")
	eventually(t, 5*time.Second, "a made a new node", func() bool { _, n := la.count(); return n == 2 })
	tokB, err := lb.last().Token(context.Background())
	require.NoError(t, err)
	assert.Greater(t, tokB, tok, "tokens increase across terms")

	// b stops: a leads again, with a fresh term.
	stopB()
	eventually(t, 5*time.Second, "a leads again", func() bool { n, _ := la.count(); return n == 2 })
	second := la.last()
	assert.False(t, notify.IsClosed(second.Done()))

	// A connection blip ends the term (Standard policy); the same session
	// and node come back: a new term on the same node.
	proxy.Cut()
	assertClosedWithin(t, second.Done(), "SUSPENDED ends the term")
	eventually(t, 10*time.Second, "a leads after the blip", func() bool { n, _ := la.count(); return n == 3 })
	third := la.last()
	assert.Equal(t, second.Node(), third.Node(), "same node")
	_, nodes := la.count()
	assert.Equal(t, 2, nodes)

	// The whole latch path deleted: a recreates it and leads. The nodes
	// and the path go in one multi, made again when a's new node came
	// between the listing and the multi (a makes one as soon as its node
	// is deleted).
	eventually(t, 10*time.Second, "the latch path deleted", func() bool {
		kids, _, err := admin.Children(context.Background(), "/latch")
		if errors.Is(err, zk.ErrNoNode) {
			return true
		}
		require.NoError(t, err)
		var ops []recipes.Op
		for _, k := range kids {
			ops = append(ops, recipes.DeleteOp("/latch/"+k, -1))
		}
		_, err = admin.Multi(context.Background(), append(ops, recipes.DeleteOp("/latch", -1))...)
		if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) {
			require.NoError(t, err)
		}
		return err == nil
	})
	assertClosedWithin(t, third.Done(), "node gone ends the term")
	eventually(t, 10*time.Second, "a leads with a new node", func() bool { n, _ := la.count(); return n == 4 })
	assert.NotEqual(t, third.Node(), la.last().Node())
}

func assertClosedWithin(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not closed within 10s", what)
	}
}

// EnterVerifyOwner: a node first in the queue that belongs to another
// session does not make a holder (Curator's CURATOR-696 double leader).
func TestEngineVerifiesTheNodesOwner(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	other := connect(t, zkc.Servers())
	ctx := context.Background()
	d := &contend.Driver{Names: []string{"latch-"}}
	ct, err := (*engine.Client)(c).Enter(ctx, "/owner", "latch-", nil, d, engine.EnterVerifyOwner())
	require.NoError(t, err)
	// The same name, now owned by another session.
	require.NoError(t, c.Delete(ctx, ct.Path(), -1))
	_, err = other.Create(ctx, ct.Path(), nil, zk.FlagEphemeral)
	require.NoError(t, err)
	held, _, err := ct.Acquire(ctx, true)
	assert.False(t, held)
	assert.ErrorIs(t, err, recipes.ErrSessionLost, "not ours: no hold")

	ct2, err := (*engine.Client)(c).Enter(ctx, "/owner2", "latch-", nil, d, engine.EnterVerifyOwner())
	require.NoError(t, err)
	held, _, err = ct2.Acquire(ctx, true)
	require.NoError(t, err)
	assert.True(t, held, "our own node first: a hold")
	require.NoError(t, ct2.Leave(ctx))
}
