// Command zkinspect shows who holds and who waits in a ZooKeeper lock,
// read/write lock, semaphore or leader latch queue. It only reads: the one
// session it opens sends read requests (and watches) only, never a create,
// set or delete, so it is safe against production ensembles.
//
// Install it with
//
//	go install github.com/zkrecipes/zkrecipes/cmd/zkinspect@latest
//
// Usage (flags may also come after <path>):
//
//	zkinspect [flags] <path>
//
//	-servers host:port,...  the ensemble (default: $ZK_SERVERS)
//	-namespace ns           the recipes' namespace: <path> and -count are inside it
//	-auth scheme:cred       authenticate the session (digest:user:password)
//	-session-timeout d      the session timeout asked of the server (default 10s)
//	-connect-timeout d      wait this long for a session (default 15s)
//	-log-level level        log to stderr at this level (default error)
//	-count <path>|<n>       a semaphore's maximum: a SharedCount path, or a number
//	-summary                summarise every lock under <path>
//	-watch                  redraw on every change until interrupted (ctrl-C); on a
//	                        plain data subtree, print each change (see below)
//	-json                   machine-readable output (one line per redraw with -watch)
//	-timeout d              give up on a one-shot inspection after d (default 30s)
//
// The first six are zkrun's operator flags too (package internal/cli).
//
// <path> is the path the recipes were given: with -namespace it is inside
// the namespace (recipes.WithNamespace), and every path shown (text and
// JSON) is inside it too, as the recipes' own paths are.
// Without -namespace, a server path ("/myapp/locks/orders") works too.
//
// What a node is, is read from its children, never from its own name or
// its parent's: their names and their mode (ephemeral or persistent, from
// each one's ephemeralOwner); a node without children is a data node or
// empty by its own data (see below). A recipe's queue node is an
// ephemeral node whose name ends with a lock name and the server's
// sequence suffix (contend.SortKey tells it, as Curator's sort does):
//
//   - mutex (also a LeaderSelector, go-zookeeper's zk.Lock, Kazoo's Lock):
//     queue nodes named ...lock-<seq> or Kazoo's <hex>__lock__<seq>; the
//     first holds.
//   - read/write lock: Curator's _c_<uuid>-__READ__<seq> and
//     _c_<uuid>-__WRIT__<seq> (or Kazoo's __rlock__ and __lock__); the
//     leading readers hold until the first writer, or the writer when it is
//     first (with a downgrade's read node at the writer's sequence).
//   - semaphore (Curator's InterProcessSemaphoreV2): a node whose children
//     are the persistent nodes leases and locks (or leases alone, once the
//     internal lock's container is reaped), holding only ...lease-<seq>
//     and ...lock-<seq> queue nodes; every lease is listed, and the
//     internal lock's queue. The maximum is not stored with the semaphore:
//     give it with -count (the SharedCount path, or the number) to see who
//     is over it.
//   - leader latch: _c_<uuid>-latch-<seq> nodes; the first leads.
//   - double barrier (Curator's DistributedDoubleBarrier, barrier.DoubleBarrier):
//     ephemeral members named by a UUID, and the persistent node ready
//     once they have entered; members are listed IN when ready exists,
//     else waiting (the barrier's memberQty is not stored in ZooKeeper).
//   - group (GroupMember): ephemeral members named by plain ids, with
//     their payloads (library curator-compatible).
//   - work queue (package queue, Curator's DistributedQueue family and
//     SimpleDistributedQueue): persistent items queue-...<seq> or
//     qn-<seq>; its depth and oldest item.
//   - a queue's lock directory (lockPath, lock-safety mode): ephemeral
//     locks named as the items they lock, perhaps with zkrecipes' markers
//     _c_<uuid>-<item>; each lock is held by the consumer of that item.
//
// A service discovery path (curator-x-discovery's layout, package
// discovery; also Spring Cloud Zookeeper's and Dubbo's /services) is
// listed as its services and their instances: a base path's children are
// services, a service's children leaf nodes holding instance JSON of that
// service (one at least must read as one). Each instance is shown with its
// address, port, service type, age, session ("persistent" for STATIC and
// PERMANENT), URI and payload class; a node that does not read as an
// instance is listed as unreadable, with the reason, and counted apart
// from the instances (a query skips it). A summary lists each service it
// finds as one line of kind service (readable instances, unreadable
// nodes), never as a group; -summary on a discovery path does the same.
//
// A node whose children are all persistent is a parent of locks (a
// summary walks it), whatever its name: a mutex at /app/locks/report is a
// mutex, and /app a parent. A node zkinspect cannot classify (ephemeral
// children no recipe makes, queue nodes of two recipes side by side) is
// shown as unknown, its children listed without roles, never guessed.
//
// -watch on a plain data subtree (a data node, or a parent under which a
// summary finds data nodes and no recipe's queue: configuration, feature
// flags) follows it through a cache (package cache: one persistent
// recursive watch on ZooKeeper 3.6+, one-shot watches below; a full read
// merged after every reconnection) and prints the nodes there, then one
// line per change as it happens, in the server's order:
//
//	12:00:01.250 created /cfg/b v0 2 bytes "on"
//	12:00:02.004 changed /cfg/b v1 (was v0) 3 bytes "off"
//	12:00:03.117 deleted /cfg/b v1
//
// "resynced" follows the changes a reconnection's full read found. With
// -json each line is a JSON object (event, path, version, old_version,
// data or data_base64, data_len, time). The choice is made when -watch
// starts.
//
// Nodes are listed in queue order (contend.SortKey, as Curator sorts them),
// with their session (ephemeralOwner), age (from their creation time), data
// and the library whose naming they follow: "curator-compatible" for
// _c_<36-character uuid>-... (Curator and zkrecipes make the same names),
// "go-zookeeper" for zk.Lock's _c_<32 hex>-lock-<seq>, "kazoo" for
// <32 hex>__lock__<seq> and __rlock__, else "unknown".
//
// When <path> is a parent (or with -summary), it walks the tree under
// <path> and prints one line per lock found: its kind, whether it is held,
// holders, waiters and the oldest waiter's age; an unknown node has a line
// of its own, with "?" where a lock has its state, and below the table a
// line "unknown <path>: <why>". The header counts each kind as its recipe
// counts it: lock paths and how many are held, double barriers, groups
// and members, work queues and items, queue lock directories and items
// locked, TTL nodes, services and instances, unknown nodes, data nodes. A semaphore whose
// maximum is unknown shows its newest lease, the internal lock holder's,
// apart: holders "1+1?" (one holds, one holds or waits for room).
// A node with data and no children (a SharedCount, a configuration node)
// is a data node, not a lock: the summary lists it apart from the lock
// paths, told apart by its data, as counter (4 or 8 bytes: "int 7",
// "long 1"), barrier ("up?": an IP address, Curator's default data, which
// a barrier's node holds, and so does a queue's directory once emptied)
// or data (its size), and counts it in its header; given as <path> it is
// shown as a data node, with its
// value as a counter when it holds 4 bytes (an int: SharedCount,
// DistributedAtomicInteger, atomicval.Int32) or 8 (a long:
// DistributedAtomicLong, atomicval.Int64). A DistributedBarrier is up
// while its node exists, down when there is no node; its node has no
// children and no data or its creator's IP address (Curator's default
// data), so only such a node, that is nothing else zkinspect knows, is
// said to be one that could be a barrier. A subtree
// the session may not read (NoAuth: an ACL protects it) is skipped with a
// line naming it and the reason, and the walk goes on.
//
// Exit status: 0 on success, 1 on an error, 2 on bad usage, 3 when the
// output is partial (a summary skipped a subtree it may not read; the
// output is complete otherwise).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errPartial):
		fmt.Fprintln(os.Stderr, "zkinspect:", err)
		os.Exit(3)
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "zkinspect:", err)
		fmt.Fprintln(os.Stderr, "zkinspect -h shows the flags")
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "zkinspect:", err)
		os.Exit(1)
	}
}

// run is the whole command: it parses args (without the program name),
// inspects, and writes the report to stdout. A -watch run returns nil when
// ctx ends; a one-shot summary that skipped a subtree returns errPartial
// after printing the rest.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseFlags(args, os.Getenv, stdout)
	if err != nil {
		return err
	}
	if cfg.help {
		return nil
	}
	c, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	if cfg.watch {
		return watchLoop(ctx, c, cfg, stdout)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	rep, err := inspect(ctx, &reader{c: c}, cfg)
	if err != nil {
		return err
	}
	if err := render(stdout, rep, cfg.json, false); err != nil {
		return err
	}
	if n := len(rep.Skipped); n > 0 {
		return fmt.Errorf("%w: %d subtree(s) skipped, not authorised to read (give -auth)", errPartial, n)
	}
	return nil
}

// errPartial says the output left out subtrees it could not read (exit
// status 3).
var errPartial = errors.New("partial output")
