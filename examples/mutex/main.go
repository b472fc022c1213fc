// Command mutex demonstrates the inter-process mutex of package mutex.
//
// It connects to the ZooKeeper ensemble named by ZK_SERVERS
// ("host:port,host:port"), or, when that is unset, starts a local server
// with zktest.Launch (Debian's zookeeper package, ZOOKEEPER_HOME, or Docker)
// and stops it at exit. Then:
//
//  1. three workers, each with a Client (a session) of its own as separate
//     processes would have, take turns on one lock; every holder prints its
//     fencing token and makes a fenced write to a shared znode;
//  2. a released lease tries to write again and is refused (fencing);
//  3. the network between one worker and the server is cut while it holds
//     the lock: the client goes SUSPENDED, the lease's Done channel closes,
//     and the same session comes back RECONNECTED.
//
// Run it with "go run ./examples/mutex". ("make demo" runs examples/bank,
// the same lock across worker processes, one killed and one frozen.)
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

const (
	lockPath     = "/zkrecipes-demo/lock"
	resourcePath = "/zkrecipes-demo-resource" // the data the lock protects
	workers      = 3
	turns        = 2
)

func main() { demo.Main(time.Minute, run) }

func run(ctx context.Context, servers []string) error {
	// worker-1 talks to the server through a TCP proxy, so that act 3 can
	// cut its network.
	proxy, err := zktest.ListenProxy(servers[0])
	if err != nil {
		return err
	}
	defer proxy.Close()

	var (
		clients []*recipes.Client
		locks   []*mutex.Mutex
	)
	defer func() {
		for _, c := range clients {
			c.Close(context.Background())
		}
	}()
	for i := 1; i <= workers; i++ {
		name := fmt.Sprintf("worker-%d", i)
		addrs := servers
		if i == 1 {
			addrs = []string{proxy.Addr()}
		}
		c, err := recipes.Connect(context.Background(), addrs, recipes.WithSessionTimeout(4*time.Second))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		clients = append(clients, c)
		fmt.Printf("%s: state %v, session 0x%x\n", name, c.State(), c.SessionID())
		c.Listen(func(s recipes.State) { fmt.Printf("%s: state %v\n", name, s) })

		m, err := mutex.New(c, lockPath, mutex.WithData([]byte(name)))
		if err != nil {
			return err
		}
		locks = append(locks, m)
	}

	// Act 1: take turns.
	fmt.Println("\n== act 1: three sessions take turns on", lockPath)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i, m := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("worker-%d", i+1)
			for turn := 1; turn <= turns; turn++ {
				if err := holdOnce(ctx, name, clients[i], m, turn); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return err
	}
	data, _, err := clients[1].Get(ctx, resourcePath)
	if err != nil {
		return err
	}
	fmt.Printf("%s now reads %q\n", resourcePath, data)

	// Act 2: a released lease can no longer write.
	fmt.Println("\n== act 2: fencing refuses a writer whose lock is gone")
	m := locks[1]
	lease, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	if err := m.Release(ctx); err != nil {
		return err
	}
	_, err = lease.Fenced(ctx, recipes.SetOp(resourcePath, []byte("stale write"), -1))
	if !errors.Is(err, recipes.ErrFenced) {
		return fmt.Errorf("stale fenced write: want ErrFenced, got %w", err)
	}
	fmt.Printf("worker-2: write after release refused: %v\n", err)

	// Act 3: a connection blip while holding the lock.
	fmt.Println("\n== act 3: the network of worker-1 is cut while it holds the lock")
	m, c := locks[0], clients[0]
	lease, err = m.Acquire(ctx)
	if err != nil {
		return err
	}
	fmt.Println("worker-1: holds the lock; cutting its connection")
	proxy.Cut()
	select {
	case <-lease.Done():
		fmt.Println("worker-1: lease.Done() closed: stop working on the protected resource")
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := c.WaitConnected(ctx); err != nil {
		return err
	}
	fmt.Printf("worker-1: back with session 0x%x (lease lost: %v)\n", c.SessionID(), lease.IsLost())
	if err := m.Release(ctx); err != nil {
		return err
	}
	fmt.Println("worker-1: released")
	if err := c.Delete(ctx, resourcePath, -1); err != nil {
		return err
	}
	time.Sleep(100 * time.Millisecond) // let the state listeners print
	return demo.Verdict(true, "%d sessions took %d turns each with fenced writes; a write after release was refused; a holder cut off saw lease.Done() close and came back", workers, turns)
}

// holdOnce takes the lock, makes a fenced write and releases the lock.
func holdOnce(ctx context.Context, name string, c *recipes.Client, m *mutex.Mutex, turn int) error {
	fmt.Printf("%s: waiting for the lock (turn %d)\n", name, turn)
	lease, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	token, err := lease.Token(ctx)
	if err != nil {
		return err
	}
	node := lease.Node()[strings.LastIndex(lease.Node(), "/")+1:]
	fmt.Printf("%s: HOLDS the lock: token %v, node %s\n", name, token, node)

	// The write is applied only if our lock node still exists.
	data := []byte(fmt.Sprintf("last written by %s holding token %v", name, token))
	op := recipes.SetOp(resourcePath, data, -1)
	if ok, _, err := c.Exists(ctx, resourcePath); err != nil {
		return err
	} else if !ok {
		op = recipes.CreateOp(resourcePath, data, 0)
	}
	if _, err := lease.Fenced(ctx, op); err != nil {
		return fmt.Errorf("fenced write: %w", err)
	}
	fmt.Printf("%s: fenced write of %s done\n", name, resourcePath)

	time.Sleep(150 * time.Millisecond) // work while holding the lock
	if err := m.Release(ctx); err != nil {
		return err
	}
	fmt.Printf("%s: released\n", name)
	return nil
}

// zookeeper returns the servers to use and a function that stops the one
// this program started, if any.
func collect(ch <-chan error) []error {
	var out []error
	for err := range ch {
		out = append(out, err)
	}
	return out
}
