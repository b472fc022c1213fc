// Command cache demonstrates package cache (Curator's CuratorCache) as a
// feature-flag mirror: services read their flags from memory, kept
// current by one persistent recursive watch, and hear every change.
//
// An admin writes a tree of flags (services, then flags under each). A
// reader mirrors it through a local TCP proxy, so that its link can be
// cut: while it is cut the admin changes flags, removes a service, and
// deletes a flag and creates it again with the same version and value
// (a change Curator's CuratorCache never reports). When the link is back
// the cache reads the tree again (a resync) and reports the difference.
//
// The verdict checks that the cache equals a fresh read of the server node
// for node (data, version, mzxid), that replaying the events the listener
// heard gives the same contents, and that the flag deleted and created
// again while away was reported.
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper,
// and ends with a verdict line. Run it with "go run ./examples/cache".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

const base = "/zkrecipes-examples/cache"

var (
	services = flag.Int("services", 4, "services in the flag tree")
	flags    = flag.Int("flags", 25, "flags per service")
	oneShot  = flag.Bool("one-shot", false, "use one-shot watches (TreeCache's way) instead of a persistent watch")
)

func main() {
	flag.Parse()
	demo.Main(2*time.Minute, run)
}

// journal replays the listener's events into a map, as an application
// mirroring the flags from events alone would.
type journal struct {
	mu        sync.Mutex
	nodes     map[string]cache.Node
	counts    map[cache.EventType]int
	recreated bool   // the flag deleted and created again while away was reported
	bad       int    // events that contradict the ones before
	quiet     string // a removed service: its flags' deletions are counted, not printed
}

func (j *journal) add(ev cache.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.counts[ev.Type]++
	_, there := j.nodes[ev.Path]
	switch ev.Type {
	case cache.NodeCreated:
		if there {
			j.bad++
		}
		if ev.Path == base+"/flags/svc-0/flag-0" && j.counts[cache.Initialized] > 0 {
			j.recreated = true
		}
		j.nodes[ev.Path] = *ev.New
	case cache.NodeChanged:
		if !there {
			j.bad++
		}
		j.nodes[ev.Path] = *ev.New
	case cache.NodeDeleted:
		if !there {
			j.bad++
		}
		delete(j.nodes, ev.Path)
	}
	if j.quiet != "" && ev.Type == cache.NodeDeleted && strings.HasPrefix(ev.Path, j.quiet+"/") {
		return
	}
	if ev.Type != cache.NodeCreated || j.counts[cache.Initialized] > 0 {
		demo.Say("reader: %s", describe(ev))
	}
}

func describe(ev cache.Event) string {
	switch {
	case ev.New != nil:
		return fmt.Sprintf("%s = %q (version %d)", ev, ev.New.Data, ev.New.Stat.Version)
	case ev.Old != nil:
		return fmt.Sprintf("%s (was %q)", ev, ev.Old.Data)
	}
	return ev.String()
}

func run(ctx context.Context, servers []string) error {
	if *services < 2 || *flags < 1 {
		return fmt.Errorf("-services must be 2 or more and -flags positive")
	}
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	defer demo.DeleteTree(admin, base)
	root := base + "/flags"
	if _, err := admin.Create(ctx, root, nil, 0); err != nil {
		return err
	}
	for s := range *services {
		svc := fmt.Sprintf("%s/svc-%d", root, s)
		if _, err := admin.Create(ctx, svc, nil, 0); err != nil {
			return err
		}
		for f := range *flags {
			if _, err := admin.Create(ctx, fmt.Sprintf("%s/flag-%d", svc, f), []byte("off"), 0); err != nil {
				return err
			}
		}
	}
	demo.Say("admin: %d services with %d flags each under %s", *services, *flags, root)

	proxy, err := zktest.ListenProxy(servers[0])
	if err != nil {
		return err
	}
	defer proxy.Close()
	reader, err := demo.Connect([]string{proxy.Addr()}, 4*time.Second)
	if err != nil {
		return err
	}
	defer reader.Close(context.Background())
	var opts []cache.Option
	if *oneShot {
		opts = append(opts, cache.WithOneShotWatches())
	}
	flagCache, err := cache.New(reader, root, opts...)
	if err != nil {
		return err
	}
	j := &journal{nodes: map[string]cache.Node{}, counts: map[cache.EventType]int{}}
	flagCache.Listen(j.add)
	began := time.Now()
	if err := flagCache.Start(ctx); err != nil {
		return err
	}
	defer flagCache.Close(context.Background())
	if err := flagCache.WaitReady(ctx); err != nil {
		return err
	}
	kind := "one persistent recursive watch"
	if !flagCache.Persistent() {
		kind = "one-shot watches"
	}
	demo.Say("reader: %d nodes cached in %v, kept current by %s", flagCache.Size(), time.Since(began).Round(time.Millisecond), kind)

	// Changes as they happen.
	set := func(path, v string) error {
		_, err := admin.Set(ctx, path, []byte(v), -1)
		return err
	}
	if err := set(root+"/svc-1/flag-3", "on"); err != nil {
		return err
	}
	if _, err := admin.Create(ctx, root+"/svc-1/flag-new", []byte("on"), 0); err != nil {
		return err
	}
	if err := waitFor(ctx, func() bool { _, ok := flagCache.Get(root + "/svc-1/flag-new"); return ok }); err != nil {
		return err
	}
	n, _ := flagCache.Get(root + "/svc-1/flag-3")
	demo.Say("service 1 reads flag-3 from memory: %q", n.Data)

	// The reader's link is cut; the admin goes on.
	resyncs := flagCache.Resyncs()
	proxy.Blackhole()
	demo.Say("reader: link cut")
	if err := waitFor(ctx, func() bool { return !reader.State().IsConnected() }); err != nil {
		return err
	}
	if err := set(root+"/svc-0/flag-1", "on"); err != nil {
		return err
	}
	flag0 := root + "/svc-0/flag-0"
	if err := admin.Delete(ctx, flag0, -1); err != nil {
		return err
	}
	if _, err := admin.Create(ctx, flag0, []byte("off"), 0); err != nil { // version 0 and "off" again
		return err
	}
	last := fmt.Sprintf("%s/svc-%d", root, *services-1)
	j.mu.Lock()
	j.quiet = last
	j.mu.Unlock()
	if err := demo.DeleteTree(admin, last); err != nil {
		return err
	}
	demo.Say("admin (reader away): flag-1 of svc-0 on, flag-0 of svc-0 deleted and created again as it was, svc-%d removed", *services-1)
	proxy.Restore()
	demo.Say("reader: link back")
	if err := waitFor(ctx, func() bool { return flagCache.Resyncs() > resyncs }); err != nil {
		return fmt.Errorf("no resync after the cut: %w", err)
	}

	// The verdict: the cache against a fresh read, and the journal.
	var same bool
	var want int
	if err := waitFor(ctx, func() bool {
		want, same, err = compare(ctx, admin, flagCache, root)
		return err != nil || same
	}); err != nil {
		return fmt.Errorf("the cache never equalled the server: %w", err)
	}
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	replayed := len(j.nodes) == flagCache.Size()
	for _, node := range flagCache.Snapshot() {
		if m, ok := j.nodes[node.Path]; !ok || m.Stat.Mzxid != node.Stat.Mzxid {
			replayed = false
		}
	}
	ok := same && replayed && j.recreated && j.bad == 0 && j.counts[cache.Initialized] == 1
	return demo.Verdict(ok, "the cache equals the server (%d nodes); events replayed give it too (%d created, %d changed, %d deleted, %d initialised, %d resynced); the flag re-created with the same version while away was reported: %v",
		want, j.counts[cache.NodeCreated], j.counts[cache.NodeChanged], j.counts[cache.NodeDeleted], j.counts[cache.Initialized], j.counts[cache.Resynced], j.recreated)
}

// compare reads root's tree from the server and compares it with the
// cache node for node: path, data, version, czxid, mzxid.
func compare(ctx context.Context, c *recipes.Client, cc *cache.Cache, root string) (int, bool, error) {
	var server []cache.Node
	var walk func(p string) error
	walk = func(p string) error {
		data, st, err := c.Get(ctx, p)
		if errors.Is(err, recipes.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		server = append(server, cache.Node{Path: p, Data: data, Stat: *st})
		kids, _, err := c.Children(ctx, p)
		if errors.Is(err, recipes.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		sort.Strings(kids)
		for _, k := range kids {
			if err := walk(p + "/" + k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return 0, false, err
	}
	mine := cc.Snapshot()
	if len(mine) != len(server) {
		return len(server), false, nil
	}
	for i, n := range mine {
		s := server[i]
		if n.Path != s.Path || string(n.Data) != string(s.Data) || n.Stat.Version != s.Stat.Version ||
			n.Stat.Czxid != s.Stat.Czxid || n.Stat.Mzxid != s.Stat.Mzxid {
			return len(server), false, nil
		}
	}
	return len(server), true, nil
}

// waitFor polls cond until it holds, for up to 20 seconds.
func waitFor(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for !cond() {
		if err := demo.Pause(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}
