// Command selector demonstrates election.Selector (Curator's
// LeaderSelector): three participants, each with a ZooKeeper session of
// its own, take turns leading. Each leads for a short turn, gives the
// leadership up by returning from its function, and queues again at the
// back (AutoRequeue), so leadership goes round in order, one participant
// at a time. An observer that does not take part follows the changes with
// election.Observe.
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper,
// runs for -duration and ends with a verdict line. Run it with
// "go run ./examples/selector".
package main

import (
	"context"
	"flag"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	base         = "/zkrecipes-examples/selector"
	selectorPath = base + "/leader"
	participants = 3
)

var (
	duration = flag.Duration("duration", 6*time.Second, "how long the participants take turns")
	turn     = flag.Duration("turn", 0, "how long each turn lasts (default: a ninth of -duration, so each leads about three times)")
)

func main() {
	flag.Parse()
	if *turn <= 0 {
		*turn = *duration / (3 * participants)
	}
	demo.Main(*duration+time.Minute, run)
}

// turnRecord is one turn, by this process's clock.
type turnRecord struct {
	by         string
	token      recipes.FenceToken
	start, end time.Time
}

func run(ctx context.Context, servers []string) error {
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	defer demo.DeleteTree(admin, base)

	obsCtx, stopObs := context.WithCancel(ctx)
	leaders, err := election.Observe(obsCtx, admin, selectorPath)
	if err != nil {
		stopObs()
		return err
	}
	var obsDone sync.WaitGroup
	obsDone.Add(1)
	go func() {
		defer obsDone.Done()
		for l := range leaders {
			if l.Node == "" {
				demo.Say("observer: nobody leads")
			} else {
				demo.Say("observer: %s leads (node %s)", l.ID, path.Base(l.Node))
			}
		}
	}()
	defer func() { stopObs(); obsDone.Wait() }()

	var (
		mu    sync.Mutex
		turns []turnRecord
	)
	lead := func(ctx context.Context, t *election.Term) error {
		rec := turnRecord{by: t.ID(), start: time.Now()}
		var err error
		if rec.token, err = t.Token(ctx); err != nil {
			// The turn ended before it began (the run is stopping): it
			// did no work and has no token to check.
			demo.Say("%s: its turn ended before it began: %v", t.ID(), err)
			return nil
		}
		demo.Say("%s: takes its turn (token %v)", t.ID(), rec.token)
		select { // the turn's work; stop at once if the leadership may be lost
		case <-time.After(*turn):
		case <-ctx.Done():
		}
		rec.end = time.Now()
		mu.Lock()
		turns = append(turns, rec)
		mu.Unlock()
		demo.Say("%s: done, hands over and queues again", t.ID())
		return nil
	}
	demo.Say("%d participants take turns leading at %s for %v, %v a turn", participants, selectorPath, *duration, *turn)
	var selectors []*election.Selector
	for i := 1; i <= participants; i++ {
		c, err := demo.Connect(servers, 4*time.Second)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		s, err := election.NewSelector(c, selectorPath, fmt.Sprintf("leader-%d", i), lead, election.WithAutoRequeue())
		if err != nil {
			return err
		}
		if err := s.Start(ctx); err != nil {
			return err
		}
		selectors = append(selectors, s)
	}
	pauseErr := demo.Pause(ctx, *duration)
	for _, s := range selectors {
		if err := s.Close(context.Background()); err != nil {
			return err
		}
	}
	if pauseErr != nil {
		return pauseErr
	}
	stopObs() // its last words before the verdict
	obsDone.Wait()

	mu.Lock()
	defer mu.Unlock()
	led := map[string]int{}
	var order []string
	ok, why := true, ""
	for i, r := range turns {
		led[r.by]++
		order = append(order, strings.TrimPrefix(r.by, "leader-"))
		if i == 0 {
			continue
		}
		prev := turns[i-1]
		switch {
		case r.start.Before(prev.end):
			ok, why = false, fmt.Sprintf("%s started before %s had finished; ", r.by, prev.by)
		case r.by == prev.by:
			ok, why = false, fmt.Sprintf("%s led twice in a row; ", r.by)
		case r.token.Compare(prev.token) <= 0:
			ok, why = false, fmt.Sprintf("token %v of %s not above %v; ", r.token, r.by, prev.token)
		}
	}
	if len(led) != participants {
		ok, why = false, fmt.Sprintf("only %d of %d participants led; ", len(led), participants)
	}
	return demo.Verdict(ok, "%s%d turns, one leader at a time, in turn (order %s), tokens increasing", why, len(turns), strings.Join(order, ","))
}
