// Command reaper demonstrates cleanup.Reaper and cleanup.Scan: per-key
// locks whose parents are persistent nodes pile up in ZooKeeper unless
// something removes them, and a Reaper does.
//
// A client made WithoutContainers (as for a server older than 3.5.3, and
// like go-zookeeper's zk.Lock, Kazoo and Curator 2.x, which all make
// persistent parents) locks and unlocks one lock per order,
// /zkrecipes-examples/reaper/orders/<order>, leaving an empty parent behind
// for each; another session keeps holding one of them. cleanup.Scan counts
// the empty parents; then a Reaper watching the orders parent deletes each
// child that stays empty for -threshold, and leaves the held one alone
// until it is released.
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper
// and ends with a verdict line. Run it with "go run ./examples/reaper".
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	base   = "/zkrecipes-examples/reaper"
	orders = base + "/orders"
	held   = "order-7"
)

var (
	keys      = flag.Int("orders", 20, "orders locked once each")
	threshold = flag.Duration("threshold", 2*time.Second, "how long a lock parent must stay empty before the reaper deletes it")
)

func main() {
	flag.Parse()
	demo.Main(20*(*threshold)+time.Minute, run)
}

func run(ctx context.Context, servers []string) error {
	if *keys < 7 {
		return fmt.Errorf("-orders must be at least 7 (%s is held)", held)
	}
	// Parents made by this client are persistent nodes, as an old client's.
	app, err := demo.Connect(servers, 4*time.Second, recipes.WithoutContainers())
	if err != nil {
		return err
	}
	defer app.Close(context.Background())
	if err := demo.DeleteTree(app, base); err != nil {
		return err
	}
	defer demo.DeleteTree(app, base)
	other, err := demo.Connect(servers, 4*time.Second, recipes.WithoutContainers())
	if err != nil {
		return err
	}
	defer other.Close(context.Background())

	// Someone holds the lock of order-7 for the whole demo.
	keep, err := mutex.New(other, orders+"/"+held)
	if err != nil {
		return err
	}
	keepLease, err := keep.Acquire(ctx)
	if err != nil {
		return err
	}
	demo.Say("another service holds the lock of %s", held)
	for i := 1; i <= *keys; i++ {
		name := fmt.Sprintf("order-%d", i)
		if name == held {
			continue
		}
		m, err := mutex.New(app, orders+"/"+name)
		if err != nil {
			return err
		}
		if _, err := m.Acquire(ctx); err != nil {
			return err
		}
		if err := m.Release(ctx); err != nil {
			return err
		}
	}
	demo.Say("locked and released %d orders, one lock path each", *keys-1)

	before, err := scan(ctx, app, "before the reaper")
	if err != nil {
		return err
	}

	r, err := cleanup.New(app, cleanup.WithParents(orders), cleanup.WithThreshold(*threshold), cleanup.WithChecks(2))
	if err != nil {
		return err
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	defer r.Close(ctx)
	demo.Say("reaper started: deletes the children of %s that stay empty for %v (2 checks)", orders, *threshold)
	var mid cleanup.ScanResult
	if err := waitScan(ctx, app, func(s cleanup.ScanResult) bool { mid = s; return s.EmptyParents == 0 }); err != nil {
		return err
	}
	demo.Say("reaper: %+v", r.Stats())
	if _, err := scan(ctx, app, "after the reaper"); err != nil {
		return err
	}
	ok, st, err := app.Exists(ctx, keepLease.Node())
	if err != nil {
		return err
	}
	stillHeld := ok && st.EphemeralOwner == other.SessionID()
	demo.Say("%s is still held: %v", held, stillHeld)

	if err := keep.Release(ctx); err != nil {
		return err
	}
	demo.Say("the other service releases %s: its parent is empty now", held)
	if err := waitScan(ctx, app, func(s cleanup.ScanResult) bool { return s.Nodes == 0 }); err != nil {
		return err
	}
	after, err := scan(ctx, app, "after the release")
	if err != nil {
		return err
	}
	stats := r.Stats()
	good := before.EmptyParents == *keys-1 && mid.EmptyParents == 0 && stillHeld && after.Nodes == 0 &&
		stats.Reaped == uint64(*keys)
	return demo.Verdict(good, "%d empty lock parents before the reaper, %d after (the held %s kept while held: %v, reaped once released); %d nodes left; reaper deleted %d",
		before.EmptyParents, mid.EmptyParents, held, stillHeld, after.Nodes, stats.Reaped)
}

// scan runs cleanup.Scan on the orders parent and prints what it found.
func scan(ctx context.Context, c *recipes.Client, when string) (cleanup.ScanResult, error) {
	s, err := cleanup.Scan(ctx, c, orders)
	if err != nil {
		return s, err
	}
	demo.Say("scan %s: %d nodes under %s, %d empty persistent parents, %d empty containers; e.g. %v",
		when, s.Nodes, orders, s.EmptyParents, s.EmptyContainers, short(s.Examples, 3))
	return s, nil
}

// waitScan scans until cond holds.
func waitScan(ctx context.Context, c *recipes.Client, cond func(cleanup.ScanResult) bool) error {
	for {
		s, err := cleanup.Scan(ctx, c, orders)
		if err != nil {
			return err
		}
		if cond(s) {
			return nil
		}
		if err := demo.Pause(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the reaper: %w (last scan %+v)", err, s)
		}
	}
}

func short(paths []string, n int) []string {
	if len(paths) > n {
		return append(paths[:n:n], "...")
	}
	return paths
}
