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
//   - Sharder is Curator's QueueSharder: several queues of one of these
//     types (shards queue-<uuid> under one path) used as one, for
//     backlogs too large for one queue; the leader of the sharders (an
//     election.Latch) adds a shard when one holds the threshold's worth
//     of items.
//
// # A ZooKeeper queue is for small volumes (Curator's Tech Note 4)
//
// ZooKeeper makes a poor queue, and Curator's own Tech Note 4 says so.
// Every item is a znode held in every server's memory and written to
// every server's log; a consumer lists the whole directory (once per
// batch of takes), whose reply grows with the backlog (4 bytes and the
// name per item) and cannot exceed the client's packet limit: the Java
// client's jute.maxbuffer, 1 MB by default, about 52,400 of Curator's
// DistributedQueue items and 61,700 of its SimpleDistributedQueue items,
// past which Curator's consumers take nothing; go-zookeeper has none
// unless recipes.WithMaxBufferSize sets one (its 1.5 MB is only the
// buffer it starts with). Every consumer is woken by every change of the
// directory. Use these queues for about a thousand items a second at
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
//     carries the whole backlog. A Queue's consumer lists once per batch
//     and stays near 1,100-1,600/s at the same depths. Filling the queue:
//     about 6,000-16,000 puts/s with 16 puts in flight.
//
// # Measured: depth, beside Curator
//
// 4 consumers, each a session, take 500 items from a backlog, ours and
// Curator's in turn on one directory (examples/bench -which peers
// -peer-workloads qdepth -queue-depths
// 1000,10000,30000,50000,55000,70000,80000 -sessions 5 -readers 5; one
// run per point; items/s, then client CPU per item):
//
//	                     Queue        DistributedQueue  SimpleQueue  SimpleDistributedQueue
//	3.8.0, Curator 5.4
//	  1,000 items        657 304µs    371 2.3ms         1,256 241µs  625 1.0ms
//	  10,000             1,156 280µs  190 3.2ms         1,148 250µs  274 2.0ms
//	  30,000             949 318µs    82 6.9ms          1,213 254µs  126 5.4ms
//	  50,000             1,259 294µs  55 12.7ms         947 316µs    89 8.8ms
//	  55,000             1,125 313µs  fails             1,007 295µs  67 10.0ms
//	  70,000             1,061 356µs  fails             1,161 312µs  fails
//	  80,000             955 376µs    fails             1,058 342µs  fails
//	3.9.6, Curator 5.7.1
//	  1,000 items        1,043 265µs  458 2.5ms         1,428 234µs  828 1.2ms
//	  10,000             1,492 247µs  170 3.2ms         1,290 249µs  323 2.1ms
//	  30,000             956 327µs    79 6.5ms          1,401 247µs  137 5.3ms
//	  50,000             1,468 292µs  51 12.5ms         1,353 292µs  96 8.4ms
//	  55,000             1,133 314µs  fails             1,346 289µs  86 9.5ms
//	  70,000             1,018 424µs  fails             1,289 328µs  fails
//	  80,000             1,174 379µs  fails             1,319 318µs  fails
//
// Ours does not degrade up to 80,000 items. Curator's falls with every
// step of depth, to about half its 1,000-item rate or less by 10,000 and to a
// seventh to a ninth by 50,000, its CPU per item growing with the
// depth: each take costs a listing of the whole directory (a
// SimpleDistributedQueue lists for every take; a DistributedQueue's
// consumers list again on every change of the directory, that is on
// each other's deletes, and race for the same head items). It fails
// (takes nothing in 20 s) once the listing passes jute.maxbuffer:
// bracketed in another run, a DistributedQueue worked at 52,000 items and
// failed at 53,000, a SimpleDistributedQueue worked at 61,000 and failed
// at 62,000, as the names' sizes predict. docs/benchmarks.md has the
// method.
//
// # Delivery
//
// SimpleQueue and Queue in normal mode deliver at most once: an item is
// read, then deleted, then handed over, so an item whose consumer dies
// after the delete is lost, and so is one whose delete reply is lost to a
// connection problem or whose Take's ctx ends after the delete was sent
// (the chaos suite's simple-queue consumers, told to stop mid-take, lost
// items so). Offers and puts are at least once: a create whose
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
//   - Nothing vanishes unseen: an item whose data does not decode (not
//     Curator's framing), which Curator's consumers delete with a log
//     line, is never consumed, and by default kept in the queue, in
//     either mode, and passed over; WithUnreadable hands it (its name and
//     bytes) to a handler of the user's instead, then deletes it. Either
//     way it is counted (Unreadable, and the metric
//     recipes.MetricQueueUnreadable) and logged at error with its bytes
//     and what happened to it.
//
// # What remains at least once
//
// Fencing makes a duplicate visible, not impossible: a consumer whose
// session is lost while it works has done whatever it did outside
// ZooKeeper, and the item is delivered to another consumer. Every
// duplicate delivery is one whose first consumer saw Done close and got
// ErrLockLost from Ack; make the work idempotent, or fence its own writes
// with Message.Fenced.
//
// # ACLs
//
// The queue node, its items, the lock directory and its lock nodes get the
// Client's ACLs (recipes.WithACLProvider). A Put or Start the server
// refuses fails at once with an error wrapping recipes.ErrNoAuth; a
// consumer that may not list its queue logs it at error level and lists
// again only at the next change of connection state. See docs/security.md.
package queue
