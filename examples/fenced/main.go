// Command fenced demonstrates why a lock needs fencing, and how a fenced
// write (Lease.Fenced) protects the data: a lock holder that pauses (a long
// GC pause, a frozen VM) loses its session and its lock while it is not
// looking, someone else takes the lock and writes, and when the paused
// holder wakes up and writes its now stale result, ZooKeeper refuses it
// with ErrFenced.
//
// worker-a reaches ZooKeeper through a local TCP proxy; its "pause" is the
// proxy dropping everything, which from the server's side is exactly a
// paused process: no heartbeats. worker-a does not look at lease.Done()
// (a paused process cannot), so only the fencing saves the data.
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper
// and ends with a verdict line. Run it with "go run ./examples/fenced".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

const (
	base        = "/zkrecipes-examples/fenced"
	lockPath    = base + "/account-lock"
	balancePath = base + "/balance"
)

var sessionTimeout = flag.Duration("session-timeout", 2*time.Second, "the workers' session timeout (worker-a's pause outlasts it)")

func main() {
	flag.Parse()
	demo.Main(10*(*sessionTimeout)+time.Minute, run)
}

func run(ctx context.Context, servers []string) error {
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	if _, err := admin.Create(ctx, balancePath, []byte("100"), 0); err != nil {
		return err
	}
	defer demo.DeleteTree(admin, base)

	proxy, err := zktest.ListenProxy(servers[0])
	if err != nil {
		return err
	}
	defer proxy.Close()
	a, err := demo.Connect([]string{proxy.Addr()}, *sessionTimeout)
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	b, err := demo.Connect(servers, *sessionTimeout)
	if err != nil {
		return err
	}
	defer b.Close(context.Background())
	unlisten := a.Listen(func(s recipes.State) { demo.Say("worker-a: connection %v (session 0x%x)", s, a.SessionID()) })
	defer unlisten()
	ma, err := mutex.New(a, lockPath, mutex.WithData([]byte("worker-a")))
	if err != nil {
		return err
	}
	mb, err := mutex.New(b, lockPath, mutex.WithData([]byte("worker-b")))
	if err != nil {
		return err
	}

	// worker-a takes the lock and reads the balance.
	leaseA, err := ma.Acquire(ctx)
	if err != nil {
		return err
	}
	tokenA, err := leaseA.Token(ctx)
	if err != nil {
		return err
	}
	balance, err := readBalance(a)
	if err != nil {
		return err
	}
	demo.Say("worker-a: holds the lock (token %v), reads balance %d, starts adding 10", tokenA, balance)

	// worker-b queues for the lock.
	type result struct {
		lease *mutex.Lease
		err   error
	}
	gotB := make(chan result, 1)
	go func() {
		l, err := mb.Acquire(ctx)
		gotB <- result{l, err}
	}()

	demo.Say("worker-a: PAUSES (a long GC pause): its heartbeats stop reaching ZooKeeper")
	proxy.Blackhole()
	paused := time.Now()
	var leaseB *mutex.Lease
	select {
	case r := <-gotB:
		if r.err != nil {
			return fmt.Errorf("worker-b: %w", r.err)
		}
		leaseB = r.lease
	case <-ctx.Done():
		return ctx.Err()
	}
	tokenB, err := leaseB.Token(ctx)
	if err != nil {
		return err
	}
	demo.Say("worker-b: holds the lock %.1fs later, after worker-a's session expired (token %v)", time.Since(paused).Seconds(), tokenB)
	balanceB, err := readBalance(b)
	if err != nil {
		return err
	}
	if _, err := leaseB.Fenced(ctx, recipes.SetOp(balancePath, []byte(strconv.Itoa(balanceB+50)), -1)); err != nil {
		return fmt.Errorf("worker-b: fenced write: %w", err)
	}
	demo.Say("worker-b: adds 50: balance %d -> %d (fenced write)", balanceB, balanceB+50)
	if err := leaseB.Release(ctx); err != nil { // Lock ran in another goroutine: release through the lease
		return err
	}
	demo.Say("worker-b: released")

	demo.Say("worker-a: wakes up, unaware; its client reconnects")
	proxy.Restore()
	if err := a.WaitConnected(ctx); err != nil {
		return err
	}
	demo.Say("worker-a: writes its result %d (a fenced write: only while its lock node exists)", balance+10)
	_, errA := leaseA.Fenced(ctx, recipes.SetOp(balancePath, []byte(strconv.Itoa(balance+10)), -1))
	switch {
	case errors.Is(errA, recipes.ErrFenced):
		demo.Say("worker-a: write REFUSED: %v", errA)
	case errA == nil:
		demo.Say("worker-a: write ACCEPTED: the balance is wrong now")
	default:
		return fmt.Errorf("worker-a: fenced write: %w", errA)
	}
	demo.Say("worker-a: its token %v is below worker-b's %v: a store that keeps the largest token seen would refuse it too", tokenA, tokenB)
	if err := ma.Release(ctx); err != nil {
		demo.Say("worker-a: unlock: %v", err)
	}
	final, err := readBalance(admin)
	if err != nil {
		return err
	}
	unlisten() // no state lines after the verdict
	return demo.Verdict(errors.Is(errA, recipes.ErrFenced) && final == balanceB+50 && tokenB.Compare(tokenA) > 0,
		"the paused holder's stale write was refused with ErrFenced; the balance is %d (worker-b's), tokens %v < %v", final, tokenA, tokenB)
}

func readBalance(c *recipes.Client) (int, error) {
	data, _, err := c.Get(context.Background(), balancePath)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(data))
}
