// Package examples holds one runnable program per recipe, each in a
// directory of its own (go run ./examples/<name>), and the test that runs
// them against a ZooKeeper server:
//
//   - bank: the demo ("make demo"): worker processes move money under a
//     mutex with fenced writes; one is killed while it holds the lock,
//     another frozen past its session and its stale write refused; the
//     ledger is audited;
//   - mutex: three sessions take turns on a lock, fencing, a network cut;
//   - rwlock: readers read a configuration while writers update it, with a
//     downgrade from the write lock to the read lock;
//   - semaphore: a pool of workers calls a service at most N at a time,
//     with the limit raised at run time through a shared.Count (with -v1,
//     through semaphore.V1, Curator's deprecated InterProcessSemaphore);
//   - latch: schedulers elect a leader that runs jobs; the leader is cut
//     off and another takes over (with -cut-mid-write, just after a write
//     that lands and whose reply is lost);
//   - selector: participants take turns leading;
//   - reaper: persistent lock parents removed by a cleanup.Reaper, counted
//     by cleanup.Scan before and after;
//   - fenced: a paused lock holder's write refused with ErrFenced;
//   - counter: workers take order numbers from one atomicval.Int64,
//     promoted to a lock when the optimistic tries lose; every number is
//     handed out once;
//   - barrier: a batch job: workers start together (a double barrier, then
//     a start gate), take job ids in blocks (atomicval.CachedInt64) and
//     finish together;
//   - queue: workers consume jobs from a queue.Queue in lock-safety mode;
//     one crashes mid-job, its job runs again elsewhere and it is told;
//     no job is lost;
//   - cache: a feature-flag tree mirrored by a cache.Cache; the reader's
//     link is cut while flags change, a service goes and a flag is deleted
//     and created again with the same version; the cache equals the
//     server after its resync (-one-shot: on TreeCache's one-shot watches);
//   - discovery: a Go service and a Java one (Curator's curator-x-discovery,
//     when installed; a second Go one otherwise) register on one base path
//     and find each other, typed payloads both ways; a cut link causes no
//     re-registration churn;
//   - group: services join a group (nodes.GroupMember) and see each
//     other; a deleted member comes back with its latest payload, a
//     duplicate id is reported, and a heartbeat TTL node is reaped after
//     Close;
//   - bench: the benchmark against go-zookeeper.
//
// Each connects to ZK_SERVERS or starts a local ZooKeeper, and the recipe
// examples end with a one-line verdict ("verdict: OK: ..." or
// "verdict: FAILED: ...", with exit status 1).
package examples
