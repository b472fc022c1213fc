package main

// Issue 25: zkinspect tells recipes apart by what their children are
// (names, modes, data), never by a parent's name. A mutex, a read/write
// lock and a leader latch are made under parents named locks, leases and
// leader, in a namespace, and zkinspect is run on them with and without
// -namespace; a semaphore under a parent named locks is still a
// semaphore, and nodes it cannot classify are shown as such.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// transcript runs zkinspect once per args and returns what an operator's
// terminal would show: each command line, then its output (normalised,
// one normaliser for the whole transcript so that a session keeps its
// number), or the JSON document normalised when args has -json. outs gets
// each raw output, for the test's own checks.
func transcript(t *testing.T, zkc *zktest.Cluster, outs map[string]string, runs ...[]string) string {
	t.Helper()
	n := new(normaliser)
	var b strings.Builder
	for _, args := range runs {
		line := strings.Join(args, " ")
		fmt.Fprintf(&b, "$ zkinspect %s\n", n.text(line))
		out, err := runOut(t, zkc, args...)
		if err != nil {
			t.Errorf("zkinspect %s: %v\n%s", line, err, out)
			fmt.Fprintf(&b, "zkinspect: %s\n", n.text(err.Error()))
		}
		if outs != nil {
			outs[line] = out
		}
		if len(args) > 0 && args[0] == "-json" && err == nil {
			out = n.json(t, out)
		} else {
			out = n.text(out)
		}
		b.WriteString(out)
		b.WriteString("\n")
	}
	return b.String()
}

// checkPaths checks what every output of a -namespace run shows: paths
// inside the namespace, never the server path nor a doubled slash.
func checkPaths(t *testing.T, ns string, outs map[string]string) {
	t.Helper()
	for cmd, out := range outs {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "namespace ") || strings.HasPrefix(strings.TrimSpace(l), `"namespace": `) {
				continue // the one line that names it
			}
			if strings.Contains(l, "//") {
				t.Errorf("zkinspect %s: a doubled slash in %q", cmd, l)
			}
			if ns != "" && strings.Contains(l, ns) {
				t.Errorf("zkinspect %s: a server path in %q", cmd, l)
			}
		}
	}
}

// wantLines checks that out has, for each of want, a line holding all of
// its words, and no line holding any of notWant.
func wantLines(t *testing.T, cmd, out string, want [][]string, notWant ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, words := range want {
		found := false
		for _, l := range lines {
			all := true
			for _, w := range words {
				all = all && strings.Contains(l, w)
			}
			if all {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("zkinspect %s: no line with %q in\n%s", cmd, words, out)
		}
	}
	for _, w := range notWant {
		if strings.Contains(out, w) {
			t.Errorf("zkinspect %s: %q in\n%s", cmd, w, out)
		}
	}
}

// nsConnect connects a client whose recipes work inside the namespace ns.
func nsConnect(t *testing.T, zkc *zktest.Cluster, ns string) *recipes.Client {
	t.Helper()
	return testutil.Connect(t, zkc.Servers(), recipes.WithNamespace(ns), recipes.WithSessionTimeout(4*time.Second))
}

// cmdLine returns the command line (as transcript keys it) that inspects
// the recipe path p of namespace ns: with -namespace ns, or by its server
// path.
func cmdLine(ns string, withNS bool) func(p string) string {
	return func(p string) string {
		switch {
		case withNS:
			return "-namespace " + ns + " " + p
		case p == "/":
			return ns
		}
		return ns + p
	}
}

// TestParentNames: under a parent named locks, leases or leader, a held
// mutex (report), a read/write lock with a reader holding and a writer
// queued (rw) and a leader latch with a leader and a follower (y), made in
// a namespace (app), are shown as what they are, with and without
// -namespace app; /app itself is a plain parent, not a semaphore.
func TestParentNames(t *testing.T) {
	zkc := zkServer(t)
	ctx := testCtx(t)
	for _, parent := range []string{"locks", "leases", "leader"} {
		t.Run(parent, func(t *testing.T) {
			runRoot := newRunRoot()
			ns := runRoot + "/app"
			obs := connectT(t, zkc)
			a, b := nsConnect(t, zkc, ns), nsConnect(t, zkc, ns)
			report, rw, y := "/"+parent+"/report", "/"+parent+"/rw", "/"+parent+"/y"

			m, err := mutex.New(a, report, mutex.WithData([]byte("holder")))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			defer m.Release(ctx)

			reader, err := rwlock.New(a, rw, mutex.WithData([]byte("reader")))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reader.ReadLock().Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			defer reader.ReadLock().Release(ctx)
			writer, err := rwlock.New(b, rw, mutex.WithData([]byte("writer")))
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancelW := context.WithCancel(ctx)
			defer cancelW()
			wdone := lockAsync(t, func() error { _, err := writer.WriteLock().Acquire(wctx); return err })
			waitChildren(t, obs, ns+rw, 2)

			for i, c := range []*recipes.Client{a, b} {
				l, err := election.NewLatch(c, y, fmt.Sprintf("candidate-%d", i+1))
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Start(ctx); err != nil {
					t.Fatal(err)
				}
				defer l.Close(ctx)
				waitChildren(t, obs, ns+y, i+1)
			}

			plain := map[string]string{}
			golden(t, "parent-"+parent, transcript(t, zkc, plain,
				[]string{ns},
				[]string{ns + "/" + parent},
				[]string{ns + report},
				[]string{ns + rw},
				[]string{ns + y},
			))
			withNS := map[string]string{}
			golden(t, "parent-"+parent+"-namespace", transcript(t, zkc, withNS,
				[]string{"-namespace", ns, "/"},
				[]string{"-namespace", ns, "/" + parent},
				[]string{"-namespace", ns, report},
				[]string{"-namespace", ns, rw},
				[]string{"-namespace", ns, y},
				[]string{"-json", "-namespace", ns, report},
			))
			checkPaths(t, "", plain)
			checkPaths(t, ns, withNS)

			// What an operator must read, whatever the layout: each queue
			// held, nothing a semaphore, nothing free.
			for _, pre := range []string{ns, ""} {
				args, outs := cmdLine(ns, pre == ""), plain
				if pre == "" {
					outs = withNS
				}
				summary := [][]string{
					{pre + report, "mutex", "held", "1", "0"},
					{pre + rw, "rwlock", "held", "1", "1"},
					{pre + y, "latch", "held", "1", "1"},
				}
				wantLines(t, args("/"), outs[args("/")], summary, "semaphore", "free", "acquiring")
				wantLines(t, args("/"+parent), outs[args("/"+parent)], summary, "semaphore", "free", "acquiring")
				wantLines(t, args(report), outs[args(report)], [][]string{{pre + report + ": mutex"}, {"1", "HOLDS", "-lock-0", `"holder"`}}, "semaphore", "waits")
				wantLines(t, args(rw), outs[args(rw)], [][]string{{pre + rw + ": read/write lock"}, {"1", "HOLDS", "read", `"reader"`}, {"2", "waits", "write", `"writer"`}}, "semaphore")
				wantLines(t, args(y), outs[args(y)], [][]string{{pre + y + ": leader latch"}, {"1", "LEADS", `"candidate-1"`}, {"2", "waits", `"candidate-2"`}}, "semaphore")
			}

			cancelW()
			if err := <-wdone; !errors.Is(err, context.Canceled) {
				t.Fatalf("queued writer: %v", err)
			}
		})
	}
}

// TestSemaphoreAndUnknown: a semaphore under a parent named locks (a lease
// held of one, a second acquirer waiting with the internal lock) is shown
// as a semaphore; a node whose children are ephemerals of no recipe
// (odd), and one whose children are queue nodes of two recipes (mixed),
// are shown as unknown, with their children, with and without -namespace.
func TestSemaphoreAndUnknown(t *testing.T) {
	zkc := zkServer(t)
	ctx := testCtx(t)
	runRoot := newRunRoot()
	ns := runRoot + "/app"
	obs := connectT(t, zkc)
	a, b := nsConnect(t, zkc, ns), nsConnect(t, zkc, ns)

	sa, err := semaphore.New(a, "/locks/sem", 1, semaphore.WithData([]byte("lease-a")))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := sa.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	sb, err := semaphore.New(b, "/locks/sem", 1, semaphore.WithData([]byte("lease-b")))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancelW := context.WithCancel(ctx)
	defer cancelW()
	bdone := lockAsync(t, func() error { _, err := sb.Acquire(wctx); return err })
	waitChildren(t, obs, ns+"/locks/sem/leases", 2)
	waitChildren(t, obs, ns+"/locks/sem/locks", 1)

	// odd: persistent, with ephemeral children named by plain ids (a
	// group's members); mixed: a lock node and a latch node side
	// by side.
	for _, p := range []string{"/locks/odd", "/locks/mixed"} {
		if _, err := a.Create(ctx, p, nil, 0); err != nil {
			t.Fatal(err)
		}
		defer obs.Delete(context.Background(), ns+p, -1)
	}
	if _, err := a.Create(ctx, "/locks/odd/worker-1", []byte("host-1"), zk.FlagEphemeral); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lock-", "latch-"} {
		if _, err := b.Create(ctx, "/locks/mixed/"+zkpath.ProtectedPrefix+zkpath.NewUUID()+"-"+name, nil, zk.FlagEphemeral|zk.FlagSequence); err != nil {
			t.Fatal(err)
		}
	}

	plain := map[string]string{}
	golden(t, "semaphore-and-unknown", transcript(t, zkc, plain,
		[]string{ns},
		[]string{ns + "/locks/sem"},
		[]string{ns + "/locks/odd"},
		[]string{ns + "/locks/mixed"},
	))
	withNS := map[string]string{}
	golden(t, "semaphore-and-unknown-namespace", transcript(t, zkc, withNS,
		[]string{"-namespace", ns, "/"},
		[]string{"-namespace", ns, "/locks/sem"},
		[]string{"-namespace", ns, "/locks/sem/leases"},
		[]string{"-namespace", ns, "/locks/odd"},
		[]string{"-namespace", ns, "/locks/mixed"},
		[]string{"-json", "-namespace", ns, "/locks/sem"},
	))
	checkPaths(t, "", plain)
	checkPaths(t, ns, withNS)
	for _, pre := range []string{ns, ""} {
		args, outs := cmdLine(ns, pre == ""), plain
		if pre == "" {
			outs = withNS
		}
		wantLines(t, args("/"), outs[args("/")], [][]string{
			{pre + "/locks/sem ", "semaphore", "held"},
			{pre + "/locks/odd ", "group"},
			{pre + "/locks/mixed ", "unknown"},
		}, "acquiring")
		wantLines(t, args("/locks/sem"), outs[args("/locks/sem")], [][]string{
			{pre + "/locks/sem: semaphore"},
			{"leases (" + pre + "/locks/sem/leases):"},
			{"internal lock (" + pre + "/locks/sem/locks):"},
			{"HOLDS", `"lease-a"`},
		})
		wantLines(t, args("/locks/odd"), outs[args("/locks/odd")], [][]string{{pre + "/locks/odd: group (GroupMember)"}, {"MEMBER", "worker-1", `"host-1"`}}, "HOLDS", "waits")
		wantLines(t, args("/locks/mixed"), outs[args("/locks/mixed")], [][]string{{pre + "/locks/mixed: unknown"}, {"-lock-0"}, {"-latch-0"}}, "HOLDS", "waits")
	}

	cancelW()
	if err := <-bdone; !errors.Is(err, context.Canceled) {
		t.Fatalf("second acquirer: %v", err)
	}
}

// TestClassifyKids: what a node is, from its children's names and modes.
func TestClassifyKids(t *testing.T) {
	const u = "_c_6f1d2c4e-8b1a-4c2d-9e3f-0a1b2c3d4e5f-"
	eph := func(name string) child {
		c := child{name: name, key: name, st: &zk.Stat{EphemeralOwner: 0x1234}}
		if lock, key := queueNodeName(name); lock != "" {
			c.lock, c.key = lock, key
		}
		return c
	}
	pers := func(name string) child {
		c := eph(name)
		c.st = &zk.Stat{NumChildren: 1}
		return c
	}
	readyNode := func() child { return child{name: "ready", key: "ready", st: &zk.Stat{}} }
	// instance is a discovery instance of the service /x (the probe's
	// path), or of another service.
	instance := func(id, service string) child {
		c := eph(id)
		data, err := (&discovery.Instance{Name: service, ID: id, Address: "10.0.0.1"}).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		c.data = data
		return c
	}
	for _, tc := range []struct {
		kids []child
		data int32
		want string
	}{
		{nil, 0, kindEmpty},
		{nil, 4, kindData},
		{[]child{eph(u + "lock-0000000001")}, 0, kindMutex},
		{[]child{eph("abc__lock__0000000001"), eph(u + "lock-0000000002")}, 0, kindMutex},
		{[]child{eph("abc__lock__0000000001"), eph("abc__rlock__0000000002")}, 0, kindRWLock},
		{[]child{eph(u + "__READ__0000000001"), eph(u + "__WRIT__0000000002")}, 0, kindRWLock},
		{[]child{eph(u + "__WRIT__-000000002")}, 0, kindRWLock}, // a sequence past 2^31
		{[]child{eph(u + "latch-0000000001")}, 0, kindLatch},
		{[]child{eph(u + "lease-0000000001")}, 0, kindLeases},
		// a mutex with a persistent child beside its queue: still a mutex
		{[]child{eph(u + "lock-0000000001"), pers("sub")}, 0, kindMutex},
		// persistent children, whatever their names: a parent
		{[]child{pers("locks")}, 0, kindParent},
		{[]child{pers("locks"), pers("leases")}, 0, kindParent}, // classify looks further
		{[]child{pers(u + "lock-0000000001")}, 0, kindParent},
		{[]child{pers("orders"), pers("jobs")}, 0, kindParent},
		// a group: ephemeral members named by plain ids
		{[]child{eph("worker-1")}, 0, kindGroup},
		{[]child{eph("worker-1"), eph("worker-2"), pers("sub")}, 0, kindGroup},
		// a TTL node: one persistent child named touch, without children
		{[]child{{name: "touch", key: "touch", st: &zk.Stat{}}}, 5, kindTTL},
		{[]child{pers("touch")}, 0, kindParent},
		// cannot tell
		{[]child{eph(u + "lock-0000000001"), eph("worker-1")}, 0, kindUnknown},
		{[]child{eph(u + "lock-0000000001"), eph(u + "latch-0000000002")}, 0, kindUnknown},
		{[]child{eph(u + "__READ__0000000001"), eph(u + "lock-0000000002")}, 0, kindUnknown},
		{[]child{eph("my-lock-a")}, 0, kindUnknown},
		{[]child{eph(u + "lock-000000001")}, 0, kindUnknown}, // 9 digits
		// double barriers: uuid members, perhaps ready (persistent, no children)
		{[]child{eph("6f1d2c4e-8b1a-4c2d-9e3f-0a1b2c3d4e5f")}, 0, kindDouble},
		{[]child{eph("6f1d2c4e-8b1a-4c2d-9e3f-0a1b2c3d4e5f"), readyNode()}, 0, kindDouble},
		{[]child{readyNode()}, 0, kindDouble},
		{[]child{eph("6f1d2c4e-8b1a-4c2d-9e3f-0a1b2c3d4e5f"), eph("worker-1")}, 0, kindUnknown},
		{[]child{eph("6f1d2c4e-8b1a-4c2d-9e3f-0a1b2c3d4e5f"), eph(u + "lock-0000000001")}, 0, kindUnknown},
		{[]child{pers("ready")}, 0, kindParent}, // a ready with children is no barrier's
		// a queue's lock directory: ephemeral locks named as the items
		// (Curator's), perhaps with zkrecipes' markers
		{[]child{eph("queue-0000000001")}, 0, kindQueueLock},
		{[]child{eph("queue-0000000001"), eph(u + "queue-0000000001")}, 0, kindQueueLock},
		{[]child{eph("queue-|job_7|0000000003"), eph("queue-1000000050000000004")}, 0, kindQueueLock},
		{[]child{eph(u + "queue-0000000001")}, 0, kindUnknown}, // a marker alone
		// a discovery service: one child at least is an instance of /x
		{[]child{instance("i-1", "x"), eph("i-2")}, 0, kindService},
		{[]child{instance("i-1", "x"), {name: "i-2", key: "i-2", st: &zk.Stat{}}}, 0, kindService},
		{[]child{instance("i-1", "x"), {name: "i-3", key: "i-3", err: zk.ErrNoAuth}}, 0, kindService}, // NoAuth: unreadable
		{[]child{instance("i-1", "y")}, 0, kindGroup},
	} {
		p := &probe{path: "/x", st: &zk.Stat{DataLength: tc.data}, kids: tc.kids}
		var names []string
		for _, k := range tc.kids {
			mode := "persistent"
			if k.ephemeral() {
				mode = "ephemeral"
			}
			names = append(names, mode+" "+k.name)
		}
		if got := classifyKids(p).kind; got != tc.want {
			t.Errorf("classifyKids(%q) = %q, want %q", names, got, tc.want)
		}
	}
}
