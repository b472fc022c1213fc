package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestWatchDataSubtree: -watch on a plain data subtree lists its nodes,
// then prints each create, change and delete as it happens, with paths
// and versions, in the server's order (text and -json).
func TestWatchDataSubtree(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	c := connectT(t, zkc)
	for _, asJSON := range []bool{false, true} {
		cfgPath := fmt.Sprintf("%s/cfg-json=%v", runRoot, asJSON)
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			for _, n := range []struct{ p, data string }{{cfgPath, "root"}, {cfgPath + "/a", "1"}, {cfgPath + "/a/x", "deep"}} {
				if _, err := c.CreateWithParents(ctx, n.p, []byte(n.data), 0); err != nil {
					t.Fatal(err)
				}
			}
			var out syncBuffer
			wctx, stop := context.WithCancel(ctx)
			args := append(tlsFlags(zkc), "-servers", zkc.ConnectString(), "-watch", cfgPath)
			if asJSON {
				args = append([]string{"-json"}, args...)
			}
			done := lockAsync(t, func() error { return run(wctx, args, &out) })
			t.Cleanup(stop)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("zkinspect printed:\n%s", out.String())
				}
			})
			// events returns the lines as "event path vN" (plus "(was vM)").
			events := func() []string {
				var evs []string
				for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					if l == "" {
						continue
					}
					if asJSON {
						var de DataEvent
						if err := json.Unmarshal([]byte(l), &de); err != nil {
							t.Fatalf("not a JSON line: %q: %v", l, err)
						}
						s := de.Event
						if de.Path != "" {
							s += fmt.Sprintf(" %s v%d", de.Path, *de.Version)
						}
						if de.OldVersion != nil {
							s += fmt.Sprintf(" (was v%d)", *de.OldVersion)
						}
						evs = append(evs, s)
						continue
					}
					f := strings.Fields(l)
					if len(f) < 2 || f[0] == "===" {
						continue
					}
					s := f[1]
					if len(f) >= 4 && strings.HasPrefix(f[3], "v") {
						s += " " + f[2] + " " + f[3]
						if len(f) >= 6 && f[4] == "(was" {
							s += " " + f[4] + " " + f[5]
						}
					}
					evs = append(evs, s)
				}
				return evs
			}
			has := func(want ...string) bool {
				evs := events()
				i := 0
				for _, e := range evs {
					if i < len(want) && e == want[i] {
						i++
					}
				}
				return i == len(want)
			}
			wait := func(what string, want ...string) {
				t.Helper()
				zktest.Eventually(t, 30*time.Second, what, func() bool { return has(want...) })
			}
			wait("the listing, then initialized",
				"created "+cfgPath+" v0", "created "+cfgPath+"/a v0", "created "+cfgPath+"/a/x v0", "initialized")
			if !asJSON && !strings.Contains(out.String(), `a data subtree, followed through a cache`) {
				t.Fatalf("no cache header:\n%s", out.String())
			}
			b := cfgPath + "/a/b"
			if _, err := c.Create(ctx, b, []byte("on"), 0); err != nil {
				t.Fatal(err)
			}
			// Each write is waited for: a node changed again before the
			// cache read it is reported once, with its latest version.
			wait("created", "initialized", "created "+b+" v0")
			if _, err := c.Set(ctx, b, []byte("off"), -1); err != nil {
				t.Fatal(err)
			}
			wait("created and changed", "initialized", "created "+b+" v0", "changed "+b+" v1 (was v0)")
			if err := c.Delete(ctx, b, -1); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Set(ctx, cfgPath, []byte("root2"), -1); err != nil {
				t.Fatal(err)
			}
			wait("deleted, then the root changed", "changed "+b+" v1 (was v0)", "deleted "+b+" v1", "changed "+cfgPath+" v1 (was v0)")
			if !asJSON && !strings.Contains(out.String(), `changed `+b+` v1 (was v0) 3 bytes "off"`) {
				t.Fatalf("the change's line lacks its data:\n%s", out.String())
			}
			stop()
			if err := <-done; err != nil {
				t.Fatalf("run -watch: %v", err)
			}
		})
	}
}

// TestPlainData: which paths -watch follows through a cache: a data node
// and a parent of data nodes; not a lock (held or idle), not a parent of
// idle locks only, not with -summary.
func TestPlainData(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	c := connectT(t, zkc)
	for _, p := range []string{runRoot + "/data/a", runRoot + "/data/b/c", runRoot + "/idle/l1", runRoot + "/idle/l2"} {
		data := []byte("v")
		if strings.Contains(p, "idle") {
			data = nil
		}
		if _, err := c.CreateWithParents(ctx, p, data, 0); err != nil {
			t.Fatal(err)
		}
	}
	m, err := mutex.New(c, runRoot+"/data/lock")
	if err != nil {
		t.Fatal(err)
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	for _, tc := range []struct {
		path    string
		summary bool
		want    bool
	}{
		{runRoot + "/data/a", false, true},
		{runRoot + "/data/b", false, true},
		{runRoot + "/data", false, false}, // the lock under it
		{runRoot + "/data/lock", false, false},
		{runRoot + "/idle", false, false},
		{runRoot + "/data/b", true, false},
		{runRoot + "/missing", false, false},
	} {
		cfg := config{path: tc.path, summary: tc.summary, timeout: 10 * time.Second}
		if got := plainData(ctx, c, cfg); got != tc.want {
			t.Errorf("plainData(%s, summary=%v) = %v, want %v", tc.path, tc.summary, got, tc.want)
		}
	}
}
