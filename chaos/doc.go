// Package chaos is the chaos suite of zkrecipes: evidence that the recipes
// keep their promises under failure. Its tests carry the build tag "chaos",
// so `go test ./...` does not run them; `make chaos` does:
//
//	go test -tags chaos -count=1 -timeout 30m -v -run TestChaos ./chaos/ -args -duration 5m -seed 1
//
// TestChaos starts a 3-member ZooKeeper ensemble (recipes/zktest, 200 ms
// ticks) and worker processes (the test binary re-run, one session each with
// a 2 s timeout, each connected through three zktest proxies of its own) that
// loop on every recipe: mutex and read/write-lock writers increment a shared
// record through fenced writes, readers check it does not change under the
// read lock, semaphore holders count themselves in a gauge, and leaders
// (LeaderSelector and LeaderLatch) write fenced heartbeats, and counter
// workers increment, compare-and-set and read one atomicval.Int64, logging
// each operation's call and return, queue workers put to and consume from
// one queue.Queue in lock-safety mode, double-barrier workers enter
// and leave a barrier.DoubleBarrier of memberQty 3 in rounds, simple-queue
// workers (one producer, two consumers) offer to and take from one
// queue.SimpleQueue, PersistentNode workers each keep an ephemeral
// nodes.PersistentNode, setting its data to a counter and closing and
// starting it anew now and then, while a watcher in the test process
// syncs and reads those nodes every 100 ms, GroupMember workers are
// members of one nodes.GroupMember group and discovery workers register
// one service's DYNAMIC instances and read them through a ServiceCache
// and a Provider, both setting their payloads every few hundred
// milliseconds and logging their views, semaphore V1 workers hold
// semaphore.V1 leases (at most 2) and count themselves in a gauge of
// their own, and sharder workers put to and consume from a queue.Sharder
// of lock-safety queues, checked by the queue workers' rules (those eight
// join through the registries in hooks_test.go, from files of their own).
// Meanwhile a
// schedule drawn from -seed injects faults: holders SIGKILLed, SIGSTOPped or
// black-holed past their session timeout, the ZooKeeper leader killed and
// restarted, followers and a quorum paused, the whole ensemble restarted. At
// the end a checker reads every worker's log and the history kept in
// ZooKeeper, and fails the test on any lost update, unacknowledged value
// without an attempt, semaphore over its maximum, leader token going
// backwards, reader seeing a write under its lock, recipe unavailable
// longer than the session timeout + 2 s after a fault heals (counted from
// a later fault's heal when a quorum pause, an ensemble restart or a
// leader kill began before the recipe served again), or node left behind;
// for the counter, a final value below the acknowledged increments or
// above those plus the ones whose outcome was unknown (a worker killed
// mid-call, ErrUnknownOutcome), and a history that porcupine
// (github.com/anishathalye/porcupine, as etcd's robustness tests use it)
// finds not linearizable; for the queue, an offered item neither delivered
// nor left queued, or a node delivered again after its consumer's ack
// succeeded (a duplicate is allowed only after its consumer was killed or
// told: ErrLockLost, Done closed); for the double barrier, an Enter
// returning before memberQty members called in, a Leave returning before
// a member that was in when it began had begun to leave, or a failed
// member's node left behind; for the simple queue (at-most-once: Take deletes the item
// before it returns it), an item taken or left queued more than once,
// beyond one copy more per connection loss during its Offer (a create
// retried), or an acknowledged item neither taken nor queued when no take
// that could have deleted it without returning it (killed, failed, or
// disconnected meanwhile) is left to blame; for PersistentNode, a node
// read with data older than its worker's last acknowledged SetData, or
// away longer than the session timeout + 2 s after the fault that took it
// healed, or left behind after its Close; for the GroupMember and
// discovery workers (nodes_test.go reads their nodes every 250 ms and cuts
// their links every 3-6 s, cuts their sessions survive), a view or the
// server that is not the live members with their latest payloads at a
// quiet instant (no fault on a server or on one of those workers within
// the session timeout + 2 s), a killed member still in the server or a
// view the session timeout + 2 s after the kill, a member missing from its
// own view, a duplicate-member report while no other session of the id
// could live, a node made again by the session that made it or a member
// vanishing from a view while its node stayed (re-registration churn),
// and a Provider returning an instance whose node has been gone 2 s.
// queuecheck_test.go, barriercheck_test.go, simplequeuecheck_test.go,
// pnodecheck_test.go and membercheck_test.go (no build tag) feed those
// checkers broken histories. linear_test.go, without the build tag, shows
// the model rejecting broken histories, an unfenced counter's among them;
// and -sabotage makes a counter worker write some increments unfenced
// (and a queue consumer break its own lock and report its ack as ok, a
// simple-queue consumer offer some items it took again, a PersistentNode
// worker write older data over its node, a group member leave itself out
// of its view, and a discovery worker unregister and register again after
// each connection loss its session survived, as Curator does:
// CURATOR-320).
// It prints one summary line starting with "CHAOS SUMMARY", which names the
// server's version (server=3.9.6).
//
// Alongside, a cache worker (cache_test.go; -cache=false leaves it out)
// keeps two caches of /chaos/cache (1,110 nodes to begin with, depth 3),
// one on a persistent recursive watch and one on the one-shot fallback,
// each on its own session through its own proxies, while writers create,
// change, delete and re-create nodes there. In cycles of a few seconds it
// cuts or black-holes the caches' links (past their session timeout every
// fourth cycle, so the sessions expire) while the suite injects its own
// faults; at each quiet point both caches must equal a fresh full read of
// the server node for node (data, version, mzxid) within a minute, and
// their events must replay to what they hold. It prints a line starting
// with "CACHE SUMMARY" (checks, mismatches, faults by kind).
//
// -tls runs the whole suite over TLS (tls_test.go): the ensemble is
// TLS-only with client certificates (zktest.WithTLS), the proxies end TLS
// on both sides, and every client, the worker processes included (the PEM
// files pass in ZKCHAOS_TLS), connects over TLS; the summary says
// tls=true. `make chaos-tls-39` runs 60 s of it on 3.9, as CI does.
//
// By default the faults on ZooKeeper members (zk-leader-kill,
// zk-follower-pause, zk-follower-create, zk-quorum-pause, zk-restart-all)
// are injected only on ZooKeeper 3.9.4 or later: Debian's ZooKeeper 3.8.0
// loses committed transactions on some replicas when a member rejoins after
// a pause or a kill (ZOOKEEPER-4712, ZOOKEEPER-4785; fixed upstream after
// 3.8.0), which the checker proves and reports as the server's violations,
// so on 3.8.0 `make chaos` injects the worker faults only. -faults all
// (`make chaos-all`) injects every kind on any server; it wants one with
// those fixes: ZooKeeper 3.9.4 or later, which `make chaos-all-39` runs
// (ZK_TEST_VERSION=3.9: Debian unstable's 3.9.6, as scripts/install-deps.sh
// zk39 unpacks it), with -pace dense. CI runs that for 5 minutes and wants
// 80 faults or more.
//
// zk-reconfig-replace (reconfig_test.go) replaces a member through
// dynamic reconfiguration: a new member reconfigured in, the leader or a
// follower reconfigured out and stopped. It needs the ensemble started
// zktest.WithReconfig, which refuses WithTLS, so it is never a default:
// -faults all includes it on ZooKeeper 3.9.4 or later without -tls, and
// naming it with -tls is an error. The proxies of the replaced member
// move to the new one (zktest.Proxy.Retarget); the clients behind them
// then keep to them (recipes.WithoutEnsembleTracking), while the test
// process's direct clients follow the reconfiguration.
package chaos
