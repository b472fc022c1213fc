//go:build chaos

package chaos

// The PersistentNode workers (nodes.PersistentNode, ephemeral): each keeps
// its node at pnodeDir/<worker> and sets its data to "<seg> <n>", n
// counting up, logging "pstart <seg> <n> <cycle>" before each new
// PersistentNode (made with that data), "pset <seg> <n>" before each
// SetData and "psetok <seg> <n>" or "pseterr <seg> <n> <error>" after it.
// Every 30-60 sets it closes the node, checks it is gone (logging
// "pclosed <cycle> <owner>", the owner of a node still there or 0) and
// starts a new one. A watcher in the test process (it runs on its own
// session, straight to the servers) syncs and reads every worker's node
// every 100 ms; the check (pnodecheck_test.go) wants every node it sees
// no older than the worker's last acknowledged SetData, and every absence
// over within the session timeout + 2 s of the fault that caused it
// healing. The suite's leftover check wants nothing under pnodeDir once
// the workers have closed their nodes (or, killed, their sessions
// expired).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	rolePNode = "pnode"
	pnodeDir  = root + "/locks/pnode" // ephemeral nodes: checkLeftovers walks root/locks
)

func init() {
	registerRole(rolePNode, 2, pacing{0, 0, 60 * time.Millisecond, 160 * time.Millisecond}, (*worker).runPNode)
	setupPaths = append(setupPaths, pnodeDir)
	roleWatchers = append(roleWatchers, startPNodeWatcher)
	roleChecks = append(roleChecks, (*harness).checkPNodeRole)
}

func pnodeData(seg int, n int64) []byte { return []byte(fmt.Sprintf("%d %d", seg, n)) }

// runPNode keeps a PersistentNode and sets its data until stopped. With
// -sabotage, every 20th acknowledged SetData is followed by a plain Set of
// older data (a node that goes back in time), left there for 600 ms.
func (w *worker) runPNode() error {
	p := pnodeDir + "/" + w.name
	var n int64
	for cycle := 1; w.ctx.Err() == nil; cycle++ {
		n++
		w.log.printf("pstart %d %d %d", w.seg, n, cycle)
		pn, err := nodes.NewPersistentNode(w.c, p, nodes.Ephemeral, pnodeData(w.seg, n))
		if err != nil {
			return err
		}
		if err := pn.Start(w.ctx); err != nil {
			return err
		}
		for range w.intN(30, 60) {
			if w.ctx.Err() != nil {
				break
			}
			w.stallPoint("hold")
			n++
			w.log.printf("pset %d %d", w.seg, n)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := pn.SetData(ctx, pnodeData(w.seg, n))
			cancel()
			if err != nil {
				w.log.printf("pseterr %d %d %s", w.seg, n, oneLine(err))
				_ = w.c.WaitConnected(w.ctx)
				continue
			}
			w.log.printf("psetok %d %d", w.seg, n)
			w.op()
			if w.sabotage && w.seq.Add(1)%20 == 0 {
				if _, err := w.c.Set(context.Background(), p, pnodeData(w.seg, n-5), -1); err == nil {
					w.log.printf("psabotage %d %d", w.seg, n-5)
					w.sleep(600*time.Millisecond, 600*time.Millisecond)
				}
			}
			w.sleep(w.p.gapMin, w.p.gapMax)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = pn.Close(ctx)
		cancel()
		if err != nil {
			w.log.printf("pcloseerr %d %s", cycle, oneLine(err))
			continue
		}
		// Closed: the node is gone, unless it is another session's.
		var owner int64
		err = w.retry(time.Minute, func() error {
			if err := w.c.Sync(context.Background(), pnodeDir); err != nil {
				return err
			}
			ok, st, err := w.c.Exists(context.Background(), p)
			if err != nil {
				return err
			}
			owner = 0
			if ok {
				owner = st.EphemeralOwner
			}
			return nil
		})
		if err != nil {
			w.log.printf("pcloseerr %d checking: %s", cycle, oneLine(err))
			continue
		}
		w.log.printf("pclosed %d %#x", cycle, owner)
		if owner != 0 && owner == w.c.SessionID() {
			w.log.printf("violation pnode: %s still there, owned by this session %#x, after Close returned nil", p, owner)
		}
	}
	return nil
}

// pnodeWatch is what the watcher saw, read by checkPNodeRole once it
// stopped.
var pnodeWatch struct {
	mu     sync.Mutex
	origin int64 // when it started, just before the faults did
	obs    []pObs
	errs   int // reads that failed (no quorum, no connection)
}

// startPNodeWatcher syncs and reads every PersistentNode worker's node
// every 100 ms on a session of its own, straight to the servers.
func startPNodeWatcher(h *harness) func() {
	var names []string
	for _, p := range h.procs {
		if p.role == rolePNode {
			names = append(names, p.name)
		}
	}
	c, err := dial(context.Background(), h.zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
	if err != nil {
		h.t.Fatalf("pnode watcher: %v", err)
	}
	pnodeWatch.origin = time.Now().UnixNano()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for _, name := range names {
				o, err := readPNode(c, name)
				pnodeWatch.mu.Lock()
				if err != nil {
					pnodeWatch.errs++
				} else {
					pnodeWatch.obs = append(pnodeWatch.obs, o)
				}
				pnodeWatch.mu.Unlock()
			}
		}
	}()
	return func() {
		// Watch the last fault's aftermath to its end.
		h.mu.Lock()
		var heal time.Time
		if n := len(h.faults); n > 0 {
			heal = h.faults[n-1].heal
		}
		h.mu.Unlock()
		if d := time.Until(heal.Add(unavailBound + 300*time.Millisecond)); d > 0 {
			time.Sleep(d)
		}
		close(done)
		wg.Wait()
		_ = c.Close(context.Background())
		// Kept with the worker logs: "<start> <end> <worker> <0|1> <seg> <n> <owner>".
		var b strings.Builder
		pnodeWatch.mu.Lock()
		for _, o := range pnodeWatch.obs {
			fmt.Fprintf(&b, "%d %d %s %d %d %d %#x\n", o.start, o.end, o.name, map[bool]int{false: 0, true: 1}[o.present], o.seg, o.n, o.owner)
		}
		pnodeWatch.mu.Unlock()
		if err := os.WriteFile(filepath.Join(h.dir, "pnode-watch.txt"), []byte(b.String()), 0o644); err != nil {
			h.t.Log(err)
		}
	}
}

// readPNode syncs and reads one worker's node.
func readPNode(c *recipes.Client, name string) (pObs, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	o := pObs{name: name, start: time.Now().UnixNano()}
	p := pnodeDir + "/" + name
	if err := c.Sync(ctx, p); err != nil {
		return o, err
	}
	data, st, err := c.Get(ctx, p)
	o.end = time.Now().UnixNano()
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return o, nil
	case err != nil:
		return o, err
	}
	o.present, o.owner = true, st.EphemeralOwner
	if _, err := fmt.Sscanf(string(data), "%d %d", &o.seg, &o.n); err != nil {
		o.seg, o.n = -1, -1 // reported as data nobody set
	}
	return o, nil
}

// checkPNodeRole checks the workers' logs against the watcher's reads.
func (h *harness) checkPNodeRole(rep *report, logs map[string][]event) {
	var lines []qLine
	for _, e := range logs[rolePNode] {
		if strings.HasPrefix(e.name, "p") {
			lines = append(lines, qLine{ts: e.ts, src: e.src, name: e.name, args: e.args})
		}
		if e.name == "psetok" {
			rep.ops[rolePNode] = append(rep.ops[rolePNode], e.ts)
		}
	}
	var faults []pFault
	for _, f := range h.faults {
		faults = append(faults, pFault{start: f.start.UnixNano(), heal: f.heal.UnixNano(), what: fmt.Sprintf("#%d %s %s", f.n, f.kind, f.target)})
	}
	pnodeWatch.mu.Lock()
	obs, errs, origin := append([]pObs(nil), pnodeWatch.obs...), pnodeWatch.errs, pnodeWatch.origin
	pnodeWatch.mu.Unlock()
	r := checkPNodeHistory(lines, obs, faults, unavailBound, origin)
	for _, v := range r.violations {
		rep.violationOf("pnode", "%s", v)
	}
	rep.extra = append(rep.extra, fmt.Sprintf("pnode-sets=%d pnode-reads=%d pnode-absences=%d (longest %v) pnode-closes=%d pnode-violations=%d",
		r.acked, len(obs), r.absences, r.longest.Round(time.Millisecond), r.closes, len(r.violations)))
	if len(r.absent1) > 12 {
		r.absent1 = append(r.absent1[:12], "...")
	}
	rep.note("pnode: %d SetData calls, %d acknowledged, %d failed; %d nodes started, %d closed and checked gone; the watcher read the nodes %d times (%d reads failed: no quorum or no connection): %d saw no node, %d a node of the latest acknowledged data or newer; %d absences (or stale data) that ended, the longest %v (bound: back within %v of the fault's heal or the absence's start): %s",
		r.calls, r.acked, r.failed, r.starts, r.closes, len(obs), errs, r.absent, r.fresh, r.absences, r.longest.Round(time.Millisecond), unavailBound, strings.Join(r.absent1, "; "))
}
