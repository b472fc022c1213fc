package interop_test

// Interop of the Go cache (package cache) with a real Apache Curator
// CuratorCache (CuratorRecipes.java, modes cache and write): both watch
// the same tree while a Go writer and a Java writer change it.
//
//   - Initial load: both report the same NODE_CREATED set, then
//     Initialized (Curator's own load order is not defined, so the set is
//     compared, not the order).
//   - Lockstep: Go and Java take turns writing random creates, sets,
//     deletes and re-creates (a re-created node has version 0 again), one
//     write at a time, each waited for in both caches. No fault, no race:
//     both report the same events, type, path and version, in the same
//     order.
//   - Burst: both writers write at once, unpaced. Both caches end equal to
//     the server (data, version, mzxid), and each one's events, replayed
//     on the state before the burst, give the server's state. The two
//     sequences may differ: a node changed twice before a cache read it is
//     reported once (both libraries read the data after the watch event),
//     where each cache's read lands differs, and Curator reports a
//     deletion at once, ahead of changes whose reads are still in flight,
//     while the Go cache keeps the server's order. The test logs where the
//     sequences first differ.
//   - Fault: the Go cache's link is black-holed while Java writes, then
//     restored. The Go cache resyncs and both end equal to the server.

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// goEvents records the Go cache's events as "TYPE path version" lines
// (the old node's version for a deletion), as the Java side prints them.
type goEvents struct {
	mu    sync.Mutex
	lines []string
	init  int // len(lines) when Initialized came
}

func (g *goEvents) add(ev cache.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch ev.Type {
	case cache.Initialized:
		g.init = len(g.lines)
	case cache.Resynced:
	default:
		n := ev.New
		if n == nil {
			n = ev.Old
		}
		g.lines = append(g.lines, fmt.Sprintf("%s %s %d", ev.Type, n.Path, n.Stat.Version))
	}
}

func (g *goEvents) get() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.lines)
}

// javaEvents returns the Curator cache's event lines (without "EVENT ")
// and how many came before INITIALIZED (-1 if it has not come).
func javaEvents(p *interop.Proc) (evs []string, init int) {
	init = -1
	for _, l := range p.Lines() {
		switch {
		case strings.HasPrefix(l, "EVENT "):
			evs = append(evs, strings.TrimPrefix(l, "EVENT "))
		case l == "INITIALIZED":
			init = len(evs)
		}
	}
	return evs, init
}

// srvNode is a node as the server, or a cache, has it.
type srvNode struct {
	version int32
	mzxid   int64
	data    string
}

func (n srvNode) String() string { return fmt.Sprintf("v%d m%d %q", n.version, n.mzxid, n.data) }

// readTree reads root's subtree from the server, plainly.
func readTree(ctx context.Context, c *recipes.Client, root string) (map[string]srvNode, error) {
	out := map[string]srvNode{}
	var walk func(p string) error
	walk = func(p string) error {
		data, st, err := c.Get(ctx, p)
		if err == zk.ErrNoNode {
			return nil
		}
		if err != nil {
			return err
		}
		out[p] = srvNode{st.Version, st.Mzxid, string(data)}
		kids, _, err := c.Children(ctx, p)
		if err == zk.ErrNoNode {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := walk(p + "/" + k); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root)
}

func goContents(cc *cache.Cache) map[string]srvNode {
	out := map[string]srvNode{}
	for _, n := range cc.Snapshot() {
		out[n.Path] = srvNode{n.Stat.Version, n.Stat.Mzxid, string(n.Data)}
	}
	return out
}

// javaContents asks the Curator cache for its contents (DUMP).
func javaContents(ctx context.Context, p *interop.Proc, seq int) (map[string]srvNode, error) {
	tag := strconv.Itoa(seq)
	if err := p.Send("DUMP " + tag); err != nil {
		return nil, err
	}
	if err := p.WaitLine(ctx, "END "+tag); err != nil {
		return nil, err
	}
	lines := p.Lines()
	begin := slices.Index(lines, "BEGIN "+tag)
	end := slices.Index(lines, "END "+tag)
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("no BEGIN/END %s in the output", tag)
	}
	out := map[string]srvNode{}
	for _, l := range lines[begin+1 : end] {
		f := strings.Fields(l)
		if len(f) != 5 || f[0] != "NODE" {
			continue // an EVENT line in between
		}
		v, err1 := strconv.ParseInt(f[2], 10, 32)
		m, err2 := strconv.ParseInt(f[3], 10, 64)
		var data []byte
		var err3 error
		if f[4] != "-" {
			data, err3 = hex.DecodeString(f[4])
		}
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("bad dump line %q", l)
		}
		out[f[1]] = srvNode{int32(v), m, string(data)}
	}
	return out, nil
}

// diff describes how got differs from want ("" when equal).
func diff(want, got map[string]srvNode) string {
	var b strings.Builder
	for p, w := range want {
		if g, ok := got[p]; !ok {
			fmt.Fprintf(&b, "missing %s (%v); ", p, w)
		} else if g != w {
			fmt.Fprintf(&b, "%s: %v, server %v; ", p, g, w)
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			fmt.Fprintf(&b, "extra %s (%v); ", p, g)
		}
	}
	return b.String()
}

// replay applies event lines to versions (path -> version), checking each
// is possible (a create of an absent node, a change or delete of a
// present one).
func replay(versions map[string]int32, evs []string) error {
	for _, e := range evs {
		f := strings.Fields(e)
		v, _ := strconv.ParseInt(f[2], 10, 32)
		_, present := versions[f[1]]
		switch f[0] {
		case "NODE_CREATED":
			if present {
				return fmt.Errorf("%q: already present", e)
			}
			versions[f[1]] = int32(v)
		case "NODE_CHANGED":
			if !present {
				return fmt.Errorf("%q: absent", e)
			}
			versions[f[1]] = int32(v)
		case "NODE_DELETED":
			if !present {
				return fmt.Errorf("%q: absent", e)
			}
			delete(versions, f[1])
		}
	}
	return nil
}

func versionsOf(m map[string]srvNode) map[string]int32 {
	out := make(map[string]int32, len(m))
	for p, n := range m {
		out[p] = n.version
	}
	return out
}

// TestCuratorCacheInterop: see the head of the file.
func TestCuratorCacheInterop(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	root := "/interop/cache-" + uuid.NewString()[:8]
	admin := testutil.Connect(t, zkc.Servers())

	// The candidate nodes: 4 x 5 x 10 under the root, depth 3.
	var cands []string
	for _, a := range []string{"a", "b", "c", "d"} {
		cands = append(cands, root+"/"+a)
		for i := range 5 {
			p := fmt.Sprintf("%s/%s/%d", root, a, i)
			cands = append(cands, p)
			for j := range 10 {
				cands = append(cands, fmt.Sprintf("%s/n%d", p, j))
			}
		}
	}
	_, err := admin.CreateWithParents(ctx, root, []byte("root"), 0)
	require.NoError(t, err)
	for i, p := range cands {
		_, err := admin.Create(ctx, p, []byte("init"+strconv.Itoa(i)), 0)
		require.NoError(t, err)
	}

	// The Go cache's client goes through a proxy for the fault phase.
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	gc := testutil.Connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(6*time.Second))
	dir := t.TempDir()
	jc := testutil.Curator(t, ctx, dir, "cache", zkc.ConnectString(), root)
	jw := testutil.Curator(t, ctx, dir, "write", zkc.ConnectString())
	cc, err := cache.New(gc, root)
	require.NoError(t, err)
	var ge goEvents
	cc.Listen(ge.add)
	require.NoError(t, cc.Start(ctx))
	t.Cleanup(func() { cc.Close(context.Background()) })
	require.NoError(t, cc.WaitReady(ctx))
	require.NoError(t, jc.WaitLine(ctx, "INITIALIZED"))
	require.NoError(t, jw.WaitLine(ctx, "READY"))

	// Initial load: the same set of NODE_CREATED.
	g0 := ge.get()
	j0, jinit := javaEvents(jc)
	require.Equal(t, len(cands)+1, len(g0), "Go cache's initial events")
	require.Equal(t, len(g0), jinit, "Curator cache's events before INITIALIZED")
	gs, js := slices.Clone(g0), slices.Clone(j0[:jinit])
	slices.Sort(gs)
	slices.Sort(js)
	require.Equal(t, gs, js, "initial NODE_CREATED sets")

	dumps := 0
	equalServer := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			want, err := readTree(ctx, admin, root)
			require.NoError(t, err)
			last := diff(want, goContents(cc))
			if last != "" {
				last = "Go cache: " + last
			} else {
				dumps++
				jm, err := javaContents(ctx, jc, dumps)
				require.NoError(t, err)
				if d := diff(want, jm); d != "" {
					last = "Curator cache: " + d
				}
			}
			if last == "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: a cache still differs from the server after 30s: %s", what, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	equalServer("after the initial load")

	// Lockstep: one write at a time, Go and Java in turn.
	rng := rand.New(rand.NewPCG(26, 1))
	exists := map[string]bool{}
	for _, p := range cands {
		exists[p] = true
	}
	hasKids := func(p string) bool {
		for q, ok := range exists {
			if ok && strings.HasPrefix(q, p+"/") {
				return true
			}
		}
		return false
	}
	jcmds := 0
	javaDo := func(cmd string) string {
		t.Helper()
		jcmds++
		require.NoError(t, jw.Send(cmd))
		want := "OK " + strconv.Itoa(jcmds)
		require.NoError(t, jw.WaitLine(ctx, want), cmd)
		return want
	}
	const lockstep = 60
	var script []string // what each write should be reported as
	recreated := 0
	var deleted []string
	for i := 0; len(script) < lockstep; i++ {
		p := cands[rng.IntN(len(cands))]
		if len(deleted) > 0 && rng.IntN(4) == 0 {
			p = deleted[rng.IntN(len(deleted))] // create it again (version 0 again)
		}
		parent := p[:strings.LastIndex(p, "/")]
		var ev, cmd string
		data := fmt.Sprintf("s%d", i)
		switch {
		case exists[p] && !hasKids(p) && rng.IntN(2) == 0:
			ev, cmd = "NODE_DELETED", "delete "+p
		case exists[p]:
			ev, cmd = "NODE_CHANGED", "set "+p+" "+data
		case parent == root || exists[parent]:
			ev, cmd = "NODE_CREATED", "create "+p+" "+data
			if slices.Contains(script, "NODE_DELETED "+p) {
				recreated++
			}
		default:
			continue
		}
		if len(script)%2 == 0 { // Go's turn
			f := strings.Fields(cmd)
			var err error
			switch f[0] {
			case "delete":
				err = admin.Delete(ctx, p, -1)
			case "set":
				_, err = admin.Set(ctx, p, []byte(f[2]), -1)
			case "create":
				_, err = admin.Create(ctx, p, []byte(f[2]), 0)
			}
			require.NoError(t, err, cmd)
		} else {
			javaDo(cmd)
		}
		exists[p] = ev != "NODE_DELETED"
		if ev == "NODE_DELETED" {
			deleted = append(deleted, p)
		}
		script = append(script, ev+" "+p)
		n := len(g0) + len(script)
		testutil.Eventually(t, 15*time.Second, cmd+" in both caches", func() bool {
			je, _ := javaEvents(jc)
			return len(ge.get()) >= n && len(je) >= n
		})
	}
	g1 := ge.get()[len(g0):]
	j1all, _ := javaEvents(jc)
	j1 := j1all[len(g0):]
	require.Equal(t, g1, j1, "lockstep: the Go and the Curator cache's events")
	for i, want := range script {
		assert.True(t, strings.HasPrefix(g1[i], want+" "), "event %d: %q, want %q", i, g1[i], want)
	}
	t.Logf("lockstep: %d writes (%d re-creates), the same %d events in both caches", lockstep, recreated, len(g1))
	equalServer("after the lockstep writes")

	// Burst: both write at once, unpaced.
	before, err := readTree(ctx, admin, root)
	require.NoError(t, err)
	gStart, jStart := len(ge.get()), len(j1all)
	const burst = 150
	randomOp := func(r *rand.Rand) (string, string) {
		p := cands[r.IntN(len(cands))]
		switch r.IntN(3) {
		case 0:
			return "create", p
		case 1:
			return "set", p
		}
		return "delete", p
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the Go writer
		defer wg.Done()
		r := rand.New(rand.NewPCG(26, 2))
		for i := range burst {
			op, p := randomOp(r)
			data := []byte(fmt.Sprintf("gb%d", i))
			switch op {
			case "create":
				admin.Create(ctx, p, data, 0)
			case "set":
				admin.Set(ctx, p, data, -1)
			case "delete":
				admin.Delete(ctx, p, -1)
			}
		}
	}()
	r := rand.New(rand.NewPCG(26, 3))
	for i := range burst {
		op, p := randomOp(r)
		cmd := op + " " + p
		if op != "delete" {
			cmd += fmt.Sprintf(" jb%d", i)
		}
		require.NoError(t, jw.Send(cmd))
	}
	jcmds += burst
	require.NoError(t, jw.Send("SYNC 1"))
	require.NoError(t, jw.WaitLine(ctx, "SYNCED 1"))
	wg.Wait()
	equalServer("after the burst")
	after, err := readTree(ctx, admin, root)
	require.NoError(t, err)
	g2 := ge.get()[gStart:]
	j2all, _ := javaEvents(jc)
	j2 := j2all[jStart:]
	for who, evs := range map[string][]string{"Go": g2, "Curator": j2} {
		v := versionsOf(before)
		require.NoError(t, replay(v, evs), "%s cache's burst events", who)
		assert.Equal(t, versionsOf(after), v, "%s cache's burst events replayed", who)
	}
	firstDiff := -1
	for i := range min(len(g2), len(j2)) {
		if g2[i] != j2[i] {
			firstDiff = i
			break
		}
	}
	t.Logf("burst: 2 x %d writes; Go cache %d events, Curator cache %d, same sequence: %v (first difference at %d)",
		burst, len(g2), len(j2), slices.Equal(g2, j2), firstDiff)
	if firstDiff >= 0 {
		t.Logf("burst, at the first difference: Go %q, Curator %q", g2[firstDiff:min(firstDiff+3, len(g2))], j2[firstDiff:min(firstDiff+3, len(j2))])
	}

	// Fault: the Go cache's link black-holed while Java writes.
	resyncs := cc.Resyncs()
	proxy.Blackhole()
	for i := range 40 {
		op, p := randomOp(r)
		cmd := op + " " + p
		if op != "delete" {
			cmd += fmt.Sprintf(" jf%d", i)
		}
		require.NoError(t, jw.Send(cmd))
	}
	require.NoError(t, jw.Send("SYNC 2"))
	require.NoError(t, jw.WaitLine(ctx, "SYNCED 2"))
	proxy.Restore()
	testutil.Eventually(t, 30*time.Second, "the Go cache's resync", func() bool { return cc.Resyncs() > resyncs })
	equalServer("after the black-hole")

	require.NoError(t, jc.Send("close"))
	require.NoError(t, jc.WaitLine(ctx, "CLOSED"))
	require.NoError(t, jw.Send("close"))
	require.NoError(t, jc.Wait())
	require.NoError(t, jw.Wait())
}
