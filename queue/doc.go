// Package queue holds Curator's distributed queues on ZooKeeper, with
// Curator's znodes and encodings, so that Go and Java processes produce
// to and consume from the same queues.
//
//   - SimpleQueue is Curator's SimpleDistributedQueue, which is
//     ZooKeeper's own contrib queue: items qn-<seq>, raw bytes; Offer,
//     Take (waits, with a ctx), Poll, Peek.
//   - Queue is Curator's DistributedQueue: items queue-<seq>, framed as
//     Curator frames them (Encode), consumed by a Consumer in the
//     background between Start and Close; normal (at-most-once) or
//     lock-safety (at-least-once) mode.
//   - IDQueue, PriorityQueue and DelayQueue are Curator's
//     DistributedIdQueue, DistributedPriorityQueue and
//     DistributedDelayQueue, with Curator's item names.
//
// # A ZooKeeper queue is for small volumes (Curator's Tech Note 4)
//
// ZooKeeper makes a poor queue, and Curator's own Tech Note 4 says so.
// Every item is a znode held in every server's memory and written to
// every server's log; a consumer lists the whole directory (once per
// batch of takes), whose reply grows with the backlog and cannot exceed the client's packet limit (the
// Java client's jute.maxbuffer, 1 MB by default: about 60,000 items, past
// which Curator's consumers fail; go-zookeeper's 1.5 MB, about 90,000,
// recipes.WithMaxBufferSize); every consumer is woken by every change of
// the directory. Use these queues for about a thousand items a second at
// most and a backlog of thousands, for coordination work (jobs, commands)
// between services that share a ZooKeeper anyway; use a message broker for
// data.
//
// # Measured
//
// On one standalone ZooKeeper 3.8.0 (fsync on, 2 cores shared with the
// clients), small items:
//
//   - Throughput, 1 producer and 4 consumers, each a session
//     (examples/bench, -which peers -peer-workloads workqueue, 1,000 items,
//     median of 3 rounds): Queue 1,050 items/s (Curator's DistributedQueue
//     696/s in the same rounds), SimpleQueue 1,021/s (Curator's
//     SimpleDistributedQueue 839/s). One producer's synchronous puts, a
//     write and an fsync each, are the bound.
//   - Depth: a SimpleQueue keeps its last listing of the directory and
//     walks it, listing again only when the walk is used up, so one
//     taker's rate no longer falls with the backlog: 500 takes at 1,000,
//     10,000, 50,000 and 70,000 items queued ran at 1,413, 1,221, 1,492
//     and 1,362 takes/s (it listed the whole directory for every take
//     before: 914, 280 and 64 takes/s at 1,000, 10,000 and 50,000 in the
//     same measurement, and 22/s at 70,000 earlier). Each listing still
//     carries the whole backlog, and the packet limit above still bounds
//     it. A Queue's consumer lists once per batch and stays near
//     1,100-1,600/s at the same depths. Filling the queue: about
//     6,000-16,000 puts/s with 16 puts in flight.
//
// # Delivery
//
// SimpleQueue and Queue in normal mode deliver at most once: an item is
// read, then deleted, then handed over, so an item whose consumer dies
// after the delete is lost, and so is one whose delete reply is lost to a
// connection problem. Offers and puts are at least once: a create whose
// reply was lost is made again, so an item can be queued twice.
//
// Queue in lock-safety mode (WithLockPath) delivers at least once: a
// consumer takes an ephemeral lock node lockPath/<item> (Curator's), runs
// the Consumer, and only then deletes the item. An item whose consumer
// dies is delivered again once the dead consumer's session expires.
//
// # Better than Curator
//
//   - CURATOR-605: in lock-safety mode Curator can hand one item to two
//     consumers at once when the first one's session dies while it works,
//     and neither is told. Here each Message has Done, which closes when
//     the lock may be gone (SUSPENDED or LOST, as every hold's Done), and
//     the final delete is fenced: one transaction that checks a node of
//     the lock holder's session still exists, deletes the item and
//     releases the lock. A consumer whose lock was lost is told, by Ack's
//     error (recipes.ErrLockLost), instead of deleting an item another
//     consumer now holds; and it never deletes that consumer's lock node
//     (Curator's guaranteed delete of the lock node does).
//   - CURATOR-56 and CURATOR-224: an item put back after a failed Consume
//     is put back in one transaction under its own name without its
//     sequence, so the name never grows and keeps its id, priority and
//     due time (Curator drops the priority and the due time).
//   - A lock-safety consumer skips an item another consumer has locked,
//     watches that lock, and takes the item once the lock goes (its
//     holder's session expired). Curator's consumer looks again only when
//     the queue's children change, so an item whose consumer died waits
//     for the next put (seen with Curator 5.4: TestCuratorInteropGoConsumerKilled).
//   - CURATOR-623: the consumer lists the directory again after every
//     reconnection and every new session, so items put while it was
//     disconnected are not missed.
//   - CURATOR-308: a SimpleQueue whose container directory was reaped
//     waits for it to be made again and is made again by Offer.
//
// # What remains at least once
//
// Fencing makes a duplicate visible, not impossible: a consumer whose
// session is lost while it works has done whatever it did outside
// ZooKeeper, and the item is delivered to another consumer. Every
// duplicate delivery is one whose first consumer saw Done close and got
// ErrLockLost from Ack; make the work idempotent, or fence its own writes
// with Message.Fenced.
package queue
