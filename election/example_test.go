package election_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// exampleServers starts one server for all the examples; TestMain stops
// it.
var exampleServers = sync.OnceValue(testutil.ExampleServers)

// ExampleLatch elects one of two participants (two processes, in real
// life: two clients here), works while the term lasts, and hands over by
// closing the latch.
func ExampleLatch() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := exampleServers() // e.g. []string{"127.0.0.1:2181"}

	var latches []*election.Latch
	for _, id := range []string{"billing-1", "billing-2"} {
		c, err := recipes.Connect(context.Background(), servers)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer c.Close(context.Background())
		l, err := election.NewLatch(c, "/services/billing/leader", id)
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := l.Start(ctx); err != nil {
			fmt.Println(err)
			return
		}
		defer l.Close(ctx)
		latches = append(latches, l)
	}
	first, second := latches[0], latches[1]

	term, err := first.Await(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leader:", term.ID())
	leader, err := second.Leader(ctx)
	fmt.Println("the other sees:", leader.ID, err)
	fmt.Println("the other leads:", second.HasLeadership())

	// Work while the term lasts; term.Done() closes when it may be over.
	select {
	case <-term.Done():
		fmt.Println("leadership may be gone: stop working")
	default:
		fmt.Println("working")
	}

	// Leaving the election hands leadership over.
	if err := first.Close(ctx); err != nil {
		fmt.Println(err)
		return
	}
	term, err = second.Await(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leader:", term.ID())
	// Output:
	// leader: billing-1
	// the other sees: billing-1 <nil>
	// the other leads: false
	// working
	// leader: billing-2
}

// ExampleLatch_Resign steps down without closing: the other participant
// leads, and a later Start rejoins at the back of the queue.
func ExampleLatch_Resign() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := recipes.Connect(ctx, exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	var latches []*election.Latch
	for _, id := range []string{"cron-1", "cron-2"} {
		l, err := election.NewLatch(c, "/services/cron/leader", id)
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := l.Start(ctx); err != nil {
			fmt.Println(err)
			return
		}
		defer l.Close(ctx)
		latches = append(latches, l)
	}
	first, second := latches[0], latches[1]
	term, err := first.Await(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leader:", term.ID())

	// Step down: the term ends and the other participant leads.
	if err := first.Resign(ctx); err != nil {
		fmt.Println(err)
		return
	}
	<-term.Done()
	if term, err = second.Await(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leader:", term.ID())

	// Rejoin, at the back of the queue.
	if err := first.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	ps, err := first.Participants(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range ps {
		fmt.Println("queue:", p.ID, p.Holds)
	}
	// Output:
	// leader: cron-1
	// leader: cron-2
	// queue: cron-2 true
	// queue: cron-1 false
}

// ExampleSelector runs a function while it leads; returning from it
// gives leadership up (with AutoRequeue the selector would queue again).
func ExampleSelector() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := recipes.Connect(context.Background(), exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	led := make(chan string, 1)
	s, err := election.NewSelector(c, "/services/reports/leader", "reports-1",
		func(ctx context.Context, term *election.Term) error {
			// Lead: work until done, or until ctx ends (leadership may
			// be lost, or the selector is closing).
			led <- "leading as " + term.ID()
			return nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case msg := <-led:
		fmt.Println(msg)
	case <-ctx.Done():
		fmt.Println("never led")
	}
	fmt.Println("close:", s.Close(ctx))
	// Output:
	// leading as reports-1
	// close: <nil>
}

// ExampleObserve follows an election without taking part: the channel
// gets the leader first, then every change ("" when nobody leads).
func ExampleObserve() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := recipes.Connect(context.Background(), exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	octx, stop := context.WithCancel(ctx)
	defer stop()
	leaders, err := election.Observe(octx, c, "/services/search/leader")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("leader: %q\n", (<-leaders).ID)

	l, err := election.NewLatch(c, "/services/search/leader", "search-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := l.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("leader: %q\n", (<-leaders).ID)
	if err := l.Close(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("leader: %q\n", (<-leaders).ID)

	stop()
	for range leaders { // closed once octx ends
	}
	// Output:
	// leader: ""
	// leader: "search-1"
	// leader: ""
}
