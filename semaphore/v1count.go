package semaphore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// awaitCount is the wait of a V1 whose maximum is a shared count:
// Curator's internalLockLoop, one look per wake through the core's
// Await. Each look lists the queue and decides with the current maximum:
// held when fewer than the maximum nodes sort ahead of ours, otherwise it
// watches the node that many places ahead (getData with a watch) and
// also wakes when the count changes. Ghosts of our own node (a create
// repeated after a lost reply) are left out. It does not leave the
// contest.
func (s *V1) awaitCount(ctx context.Context, ct *engine.Contest, wait bool) (engine.Signals, error) {
	e := (*engine.Client)(s.c)
	me := ct.Node().Name
	prefix := me[:strings.LastIndex(me, mutex.LockName)] // _c_<uuid>-
	var sig engine.Signals
	held, err := e.Await(ctx, engine.Wait{What: ct.Path(), Session: ct.Session(), Once: !wait}, func(snap engine.Snapshot, _ engine.Wake) (engine.Look, error) {
		max, changed := s.limit()
		kids, _, err := e.Children(ctx, s.full)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return engine.Look{}, fmt.Errorf("waiting for %s: %w", ct.Path(), err)
		}
		kids = slices.DeleteFunc(kids, func(k string) bool { return k != me && strings.HasPrefix(k, prefix) })
		sorted := contend.SortContenders(kids, s.driver)
		ours := slices.IndexFunc(sorted, func(c contend.Contender) bool { return c.Name == me })
		switch {
		case ours < 0 && e.Snapshot().SessionID != ct.Session():
			return engine.Look{}, fmt.Errorf("%w: node %s went with its session", recipes.ErrSessionLost, ct.Path())
		case ours < 0:
			return engine.Look{}, fmt.Errorf("%w: node %s was deleted by someone else", recipes.ErrLockLost, ct.Path())
		case ours < max:
			hold := e.HoldSignal(snap)
			if notify.IsClosed(hold) || notify.IsClosed(snap.Changed) {
				return engine.Look{Again: true}, nil // the connection blinked while we looked
			}
			sig = engine.Signals{Done: hold, Lost: snap.Lost}
			return engine.Look{Done: true}, nil
		case !wait:
			return engine.Look{}, nil
		case max <= 0: // Curator watches its own node: only a new count helps
			return engine.Look{Also: changed}, nil
		}
		_, _, watch, err := e.GetW(ctx, zkpath.JoinPath(s.full, sorted[ours-max].Name))
		if errors.Is(err, zk.ErrNoNode) {
			return engine.Look{Again: true}, nil // gone already: look again
		}
		if err != nil {
			return engine.Look{}, fmt.Errorf("waiting for %s: %w", ct.Path(), err)
		}
		return engine.Look{Watch: watch, Also: changed}, nil
	})
	switch {
	case err != nil:
		return engine.Signals{}, err
	case !held:
		return engine.Signals{}, fmt.Errorf("%w: %d leases taken", recipes.ErrNotAcquired, max(s.MaxLeases(), 0))
	}
	return sig, nil
}
