//go:build chaos

package chaos

// The GroupMember workers (nodes.GroupMember): memberWorkers processes,
// each a member of the group at groupPath with its worker name as its id
// (a worker restarted after a SIGKILL joins with the same id while its
// old session may still hold the node: a real duplicate, which it must
// report until that session expires) and the payload
// "<name>.<seg>.<n>", set again every few hundred milliseconds. Each logs
// its view (CurrentMembers, read every memberViewEvery) whenever it
// changes, and the duplicate-member report (Listen) when it begins and
// ends; the log lines are membercheck_test.go's. With -sabotage, group-1
// leaves itself out of the views it logs.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/nodes"
)

const roleGroup = "group"

func init() {
	registerRole(roleGroup, memberWorkers, pacing{0, 0, 300 * time.Millisecond, 900 * time.Millisecond}, (*worker).runGroup)
	setupPaths = append(setupPaths, groupPath)
	roleChecks = append(roleChecks, (*harness).checkGroupRole)
}

func (w *worker) runGroup() error {
	n := 0
	payload := func() string { return fmt.Sprintf("%s.%d.%d", w.name, w.seg, n) }
	p0 := payload()
	w.log.printf("mset %s", p0)
	g, err := nodes.NewGroupMember(w.c, groupPath, w.name, []byte(p0))
	if err != nil {
		return err
	}
	if err := w.retry(2*time.Minute, func() error { return g.Start(w.ctx) }); err != nil {
		if w.ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("start the group member: %w", err)
	}
	dup := false
	remove := g.Listen(func(s nodes.GroupState) {
		switch {
		case s.Duplicate != nil && !dup:
			w.log.printf("mdup 1 %s", oneLine(s.Duplicate))
		case s.Duplicate == nil && dup:
			w.log.printf("mdup 0")
		}
		dup = s.Duplicate != nil
	})
	stopViews := w.logViews(func() map[string]map[string]string {
		m := map[string]string{}
		for _, x := range g.CurrentMembers() {
			m[x.ID] = string(x.Payload)
		}
		if w.sabotage && w.name == roleGroup+"-1" {
			delete(m, w.name) // a member that drops itself from its view
		}
		return map[string]map[string]string{"members": m}
	}, nil)

	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
	err = g.WaitReady(ctx)
	cancel()
	if err == nil {
		w.log.printf("msetok %s", p0)
		w.op()
	} else if w.ctx.Err() == nil {
		w.log.printf("mseterr %s %s", p0, oneLine(err))
	}
	for w.ctx.Err() == nil {
		w.stallPoint("hold")
		w.sleep(w.p.gapMin, w.p.gapMax)
		if w.ctx.Err() != nil {
			break
		}
		n++
		p := payload()
		w.log.printf("mset %s", p)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := g.SetData(ctx, []byte(p))
		cancel()
		if err == nil {
			w.log.printf("msetok %s", p)
			w.op()
		} else {
			w.log.printf("mseterr %s %s", p, oneLine(err))
		}
	}
	stopViews()
	remove()
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return g.Close(ctx)
}

// logViews reads the worker's views every memberViewEvery and logs each
// that changed ("mview <kind> <members>"); pick, when not nil, is called
// every memberPickEvery. The returned function stops it.
func (w *worker) logViews(views func() map[string]map[string]string, pick func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := map[string]string{}
		t := time.NewTicker(memberViewEvery)
		defer t.Stop()
		var lastPick time.Time
		for {
			for kind, m := range views() {
				if s := memberView(m); s != last[kind] {
					last[kind] = s
					w.log.printf("mview %s %s", kind, s)
				}
			}
			if pick != nil && time.Since(lastPick) >= memberPickEvery {
				lastPick = time.Now()
				pick()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

func (h *harness) checkGroupRole(rep *report, logs map[string][]event) {
	r := h.checkMemberRole(rep, logs, roleGroup, true)
	memberSummary(rep, roleGroup, r, false)
}
