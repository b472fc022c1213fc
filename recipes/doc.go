// Package recipes is the public core of zkrecipes, ZooKeeper coordination
// recipes for Go that share their znodes with Apache Curator's.
//
// It provides the Client every recipe takes, and what a user of the
// recipes touches:
//
//   - Connection states as Curator names them (CONNECTED, SUSPENDED,
//     RECONNECTED, LOST, READ_ONLY), published in order to listeners. The
//     Client drains go-zookeeper's session events at once, and declares LOST
//     itself one negotiated session timeout after the server last answered
//     (both read from the protocol by a Wire), since go-zookeeper only
//     learns of an expiry after it reconnects. If a session declared LOST
//     comes back, the nodes of its lost holds are deleted at once.
//   - Error policies (Standard and Session) that decide when a hold — a
//     lock, a lease, a leadership — may be gone, exposed as Done channels.
//   - Namespaces, ACL providers, digest authentication, a retry policy
//     built on cenkalti/backoff for transient connection errors, path
//     validation, and the sentinel errors every recipe's errors match (the
//     one set of the module, defined here only).
//   - Hold, the public view of every acquisition: its node, Done, a
//     fencing token, fenced writes and Release; Participant, the one view
//     of a node in any recipe's queue.
//
// The recipes themselves live in their own packages (mutex, rwlock,
// semaphore, election, cleanup), all driving one internal engine: the
// same protected creates, container parents, guaranteed deletes and
// contender queue as Curator's LockInternals.
//
// # What the recipes guarantee, and what they do not
//
// Every hold (a lock, a lease, a leadership) is a node that lives as long as
// a ZooKeeper session. What the recipes guarantee: no two holders at once in
// ZooKeeper's order of events (the server's view), a token (Hold.Token)
// that strictly increases from one holder to the next, and a Done channel
// that closes, on this process's clock, no later than the moment the server
// may expire the session (LOST is declared one negotiated session timeout
// after we sent the last request the server answered: the server heard
// from us no earlier), and also at SUSPENDED under the Standard error
// policy.
//
// What they do not guarantee, and nothing built on ZooKeeper can:
//
//   - That a holder still holds when its own code next runs. A process
//     paused past its session timeout (a long GC, SIGSTOP, a frozen VM, a
//     laptop lid) wakes up in the middle of its critical section while
//     another process holds the lock; Done closes only once the Client's
//     goroutines run again, which may be after the holder's next write.
//     That is what fencing tokens are for: have the protected resource
//     refuse a write whose token is lower than one it has seen (Hold.Token
//     for an external store), or make ZooKeeper writes conditional on the
//     holder's node in the same transaction (Hold.Fenced, refused with
//     ErrFenced once the node is gone).
//   - That a crashed holder's lock is free at once: its node goes when the
//     server expires its session, one session timeout after the crash.
//     Shorter timeouts free it sooner and give up more often on a slow
//     network.
//   - That Done never closes needlessly: under the Standard policy a short
//     connection blip closes it although the session survives. Use the
//     Session policy to wait for LOST instead, and accept that a hold is
//     then trusted for up to one session timeout without contact.
//   - Exact timing against the server's own clock: the server times expiry
//     from the last packet it received, on its own clock and rounded up to
//     its tick; LOST comes before it, by up to one round trip, but a clock
//     that runs slow, or a process paused, moves that. Fencing covers it.
//   - Order or safety when recipes from other libraries share a path in
//     ways those libraries do not agree on (Curator and Kazoo on one mutex,
//     for one: see package mutex).
//
// # One path rule, both ways
//
// Every path the library takes, by a recipe or by a Client method, and
// every path it returns (a hold's Node, a Participant's Node, an error's
// path, a watch event's path) is inside the client's namespace, as
// Curator's paths are: anything the library returns can be passed back to
// any method. Client.FullPath shows the server path of one. The namespace
// node itself is created, as a container, the first time a create under
// it finds it missing. UnsafeConn is the one way around the rule.
//
// # Vocabulary
//
// The same concept has the same name in every package. Acquire (and
// TryAcquire) returns the hold; every hold releases with Release(ctx),
// from any goroutine. Options are With... functions, checked by the
// constructor. A recipe that lives on (a latch, a selector, a reaper, a
// shared count) is made by a constructor that touches nothing, runs from
// Start(ctx), and stops with Close(ctx); a Start that fails leaves nothing
// in ZooKeeper.
//
// Listeners follow one rule everywhere (Client, Latch, shared.Count):
// Listen(fn) and Subscribe() deliver the current state first, once there
// is one (a client's connection state after its first session, a latch's
// leadership once it has been decided, a shared count's value once read),
// then every change, in order, each listener on a goroutine of its own, so
// that a slow listener delays only itself.
//
// # Metrics
//
// WithMetrics makes a Client report to a Metrics sink; adapters for
// Prometheus (metrics/prommetrics) and OpenTelemetry (metrics/otelmetrics)
// live in packages of their own. The engine measures, so every recipe
// reports alike. The fixed set (Prometheus names in brackets, as the
// Prometheus adapter and OpenTelemetry's Prometheus exporter write them):
//
//	name (Prometheus name)                          kind       labels              meaning
//	zkrecipes.connection.state_changes              counter    state               transitions, by the state entered:
//	  (zkrecipes_connection_state_changes_total)                                   CONNECTED, SUSPENDED, RECONNECTED,
//	                                                                               LOST (a session expired or declared
//	                                                                               lost), READ_ONLY
//	zkrecipes.connection.suspended                  counter s  -                   time spent SUSPENDED, added when the
//	  (zkrecipes_connection_suspended_seconds_total)                               suspension ends
//	zkrecipes.requests                              counter    op, result          requests sent; op: create, delete,
//	  (zkrecipes_requests_total)                                                   get_data, exists, get_children,
//	                                                                               set_data, multi, sync, add_auth;
//	                                                                               result: ok; no_parent,
//	                                                                               parent_exists (steps of a healthy
//	                                                                               create, below); no_node,
//	                                                                               node_exists, bad_version (the
//	                                                                               server's "no"); connection,
//	                                                                               session_expired, ctx_done, other
//	zkrecipes.retries                               counter    -                   pauses before another attempt after
//	  (zkrecipes_retries_total)                                                    a connection error (Retry, a recipe's
//	                                                                               wait, a background delete)
//	zkrecipes.deletes.pending                       gauge      -                   guaranteed deletes in progress
//	  (zkrecipes_deletes_pending)
//	zkrecipes.recipe.acquires                       counter    recipe,             acquisitions that queued a node;
//	  (zkrecipes_recipe_acquires_total)                        zk_namespace,       result: acquired, not_acquired,
//	                                                           path, result        ctx_done, lost, error; a latch
//	                                                                               counts each term it starts
//	zkrecipes.recipe.wait                           hist. s    recipe,             queueing (before the create) to
//	  (zkrecipes_recipe_wait_seconds)                          zk_namespace, path  holding, acquisitions that held
//	zkrecipes.recipe.hold                           hist. s    recipe,             holding to release (a term: to its end)
//	  (zkrecipes_recipe_hold_seconds)                          zk_namespace, path
//	zkrecipes.recipe.queue                          histogram  recipe,             contenders ahead (a semaphore: leases
//	  (zkrecipes_recipe_queue)                                 zk_namespace, path  taken) at the first look
//	zkrecipes.recipe.held                           gauge      recipe,             holds held now (locks, leases, terms)
//	  (zkrecipes_recipe_held)                                  zk_namespace, path
//	zkrecipes.queue.unreadable                      counter    recipe,             queue items whose data did not
//	  (zkrecipes_queue_unreadable_total)                       zk_namespace,       decode; result: kept (left in the
//	                                                           path, result        queue) or handed (to the queue's
//	                                                                               WithUnreadable handler, deleted)
//
// A create that finds its parent missing is counted as no_parent, not as
// an error: the client then creates the parents (as containers) and tries
// again, and a parent another client made first is parent_exists. A
// Client makes a zero series, up front, only for the results each op can
// have (node_exists for create and multi, bad_version for delete, set_data
// and multi, no_node for every op but exists, sync and add_auth; the others
// for every op), so a dashboard sees the first of each happen.
//
// The recipe label is mutex, rwlock_read, rwlock_write, semaphore,
// semaphore_v1, latch or selector (for zkrecipes.queue.unreadable: queue, id_queue,
// priority_queue or delay_queue); zk_namespace is the Client's namespace
// (without its leading "/"; empty without one) and path the recipe path
// within it, as given, so two namespaces never share a series.
// A semaphore's wait runs from Acquire to the lease, its internal lock at
// <path>/locks included (that lock is not a recipe of its own in the
// metrics). What is measured is the node: a reentrant Lock, or a hand-off
// within the process (mutex.WithLocalHandoff), queues no node and is not
// an acquisition of its own. Every recipe path is a series: with many
// paths (a lock per user id, say) map them to fewer with
// WithMetricsPathLabel.
//
// Nodes are laid out exactly as Curator lays them out, so Go and Java
// processes can share locks and elections.
package recipes
