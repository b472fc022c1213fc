// Command rwlock demonstrates the read/write lock of package rwlock with a
// shared configuration: readers read it while writers update it, and a
// writer downgrades its write lock to a read lock.
//
// The configuration is two znodes, a version and a body that repeats the
// version, and a writer updates them one after the other: without the
// lock a reader could see the new version with the old body. Three reader
// sessions read under the read lock (they read together) and check that
// the two agree; two writer sessions update under the write lock (alone).
// writer-1 then downgrades: it takes the read lock while it still holds the
// write lock and releases the write lock, so it goes on reading the
// configuration it wrote while readers join in, and no writer can change
// it meanwhile (writer-2, queued, waits until writer-1 stops reading).
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper,
// runs for -duration and ends with a verdict line. Run it with
// "go run ./examples/rwlock".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

const (
	base        = "/zkrecipes-examples/rwlock"
	lockPath    = base + "/lock"
	versionPath = base + "/config/version"
	bodyPath    = base + "/config/body"
	readers     = 3
)

var (
	duration = flag.Duration("duration", 6*time.Second, "how long readers and writers run")
	colors   = []string{"red", "green", "blue", "amber"}
)

func main() {
	flag.Parse()
	demo.Main(*duration+time.Minute, run)
}

// stats are what the verdict is made of.
type stats struct {
	reads, torn, writes, downgrades, staleDowngrades atomic.Int64
	readsWhileDowngraded                             atomic.Int64
	downgraded                                       atomic.Bool
}

func run(ctx context.Context, servers []string) error {
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	if err := demo.EnsurePath(admin, base+"/config"); err != nil {
		return err
	}
	if _, err := admin.Create(ctx, versionPath, []byte("0"), 0); err != nil {
		return err
	}
	if _, err := admin.Create(ctx, bodyPath, body(0), 0); err != nil {
		return err
	}
	defer demo.DeleteTree(admin, base)

	var st stats
	runCtx, stop := context.WithTimeout(ctx, *duration)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, readers+2)
	actor := func(name string, fn func(context.Context, string, *recipes.Client, *rwlock.RWLock, *stats) error) {
		c, err := demo.Connect(servers, 4*time.Second)
		if err != nil {
			errs <- err
			return
		}
		rw, err := rwlock.New(c, lockPath, mutex.WithData([]byte(name)))
		if err != nil {
			c.Close(context.Background())
			errs <- err
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close(context.Background())
			if err := fn(runCtx, name, c, rw, &st); err != nil && runCtx.Err() == nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				stop()
			}
		}()
	}
	demo.Say("3 readers and 2 writers share %s for %v", lockPath, *duration)
	for i := 1; i <= readers; i++ {
		actor(fmt.Sprintf("reader-%d", i), reader)
	}
	actor("writer-1", writer)
	actor("writer-2", writer)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return err
	}
	ok := st.torn.Load() == 0 && st.staleDowngrades.Load() == 0 && st.reads.Load() > 0 &&
		st.writes.Load() > 0 && st.downgrades.Load() > 0
	why := ""
	if st.staleDowngrades.Load() > 0 {
		why = "a writer got in while writer-1 still held its downgraded read lock; "
	}
	return demo.Verdict(ok, "%s%d reads, %d torn; %d writes; %d downgrades, in which writer-1 read back its own write %d times out of %d (%d reads by others meanwhile)",
		why, st.reads.Load(), st.torn.Load(), st.writes.Load(), st.downgrades.Load(),
		st.downgrades.Load()-st.staleDowngrades.Load(), st.downgrades.Load(), st.readsWhileDowngraded.Load())
}

func body(v int) []byte {
	return []byte(fmt.Sprintf("version=%d color=%s", v, colors[v%len(colors)]))
}

// readConfig reads both znodes and reports whether they agree.
func readConfig(c *recipes.Client) (version int, b string, consistent bool, err error) {
	vb, _, err := c.Get(context.Background(), versionPath)
	if err != nil {
		return 0, "", false, err
	}
	bb, _, err := c.Get(context.Background(), bodyPath)
	if err != nil {
		return 0, "", false, err
	}
	v, err := strconv.Atoi(string(vb))
	if err != nil {
		return 0, "", false, err
	}
	return v, string(bb), strings.HasPrefix(string(bb), fmt.Sprintf("version=%d ", v)), nil
}

// reader reads the configuration under the read lock, again and again.
func reader(ctx context.Context, name string, c *recipes.Client, rw *rwlock.RWLock, st *stats) error {
	seen := -1
	for ctx.Err() == nil {
		if _, err := rw.ReadLock().Acquire(ctx); err != nil {
			return err
		}
		v, b, ok, err := readConfig(c)
		if st.downgraded.Load() {
			st.readsWhileDowngraded.Add(1)
		}
		if uerr := rw.ReadLock().Release(context.Background()); err == nil {
			err = uerr
		}
		if err != nil {
			return err
		}
		st.reads.Add(1)
		if !ok {
			st.torn.Add(1)
			demo.Say("%s: TORN read: version %d with body %q", name, v, b)
		} else if v != seen {
			demo.Say("%s: reads %q", name, b)
			seen = v
		}
		if err := demo.Pause(ctx, 40*time.Millisecond); err != nil {
			return nil
		}
	}
	return nil
}

// writer updates the configuration under the write lock; writer-1 then
// downgrades and reads on.
func writer(ctx context.Context, name string, c *recipes.Client, rw *rwlock.RWLock, st *stats) error {
	for ctx.Err() == nil {
		if err := demo.Pause(ctx, 300*time.Millisecond); err != nil {
			return nil
		}
		lease, err := rw.WriteLock().Acquire(ctx)
		if err != nil {
			return err
		}
		v, _, _, err := readConfig(c)
		if err == nil {
			v++
			// Two writes, one after the other: a reader without the lock
			// could see the first without the second.
			if _, err = c.Set(ctx, versionPath, []byte(strconv.Itoa(v)), -1); err == nil {
				time.Sleep(20 * time.Millisecond) // demo pacing: widen the gap
				_, err = c.Set(ctx, bodyPath, body(v), -1)
			}
		}
		if err != nil {
			rw.WriteLock().Release(context.Background())
			return err
		}
		token, _ := lease.Token(ctx)
		st.writes.Add(1)
		demo.Say("%s: WRITE lock (token %v): wrote version %d", name, token, v)
		if name != "writer-1" {
			if err := rw.WriteLock().Release(ctx); err != nil {
				return err
			}
			continue
		}
		if err := downgrade(ctx, name, c, rw, st, v); err != nil {
			return err
		}
	}
	return nil
}

// downgrade takes the read lock while holding the write lock, releases the
// write lock, and reads the configuration it wrote while others read too.
func downgrade(ctx context.Context, name string, c *recipes.Client, rw *rwlock.RWLock, st *stats, wrote int) error {
	if _, err := rw.ReadLock().Acquire(ctx); err != nil {
		rw.WriteLock().Release(context.Background())
		return err
	}
	if err := rw.WriteLock().Release(ctx); err != nil {
		rw.ReadLock().Release(context.Background())
		return err
	}
	st.downgrades.Add(1)
	st.downgraded.Store(true)
	demo.Say("%s: downgraded to the READ lock: readers may read version %d now, writers wait", name, wrote)
	pauseErr := demo.Pause(ctx, 150*time.Millisecond) // demo pacing: others read meanwhile
	v, _, ok, err := readConfig(c)
	st.downgraded.Store(false)
	if uerr := rw.ReadLock().Release(context.Background()); err == nil {
		err = uerr
	}
	if err != nil {
		return err
	}
	if pauseErr != nil {
		return nil // the run ended during the pause: the read does not count
	}
	if !ok || v != wrote {
		st.staleDowngrades.Add(1)
		demo.Say("%s: after the downgrade read version %d instead of its own %d", name, v, wrote)
	} else {
		demo.Say("%s: still reads its own version %d; releases the READ lock", name, v)
	}
	return nil
}
