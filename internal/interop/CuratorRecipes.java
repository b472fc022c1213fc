// CuratorRecipes drives real Apache Curator recipes for zkrecipes' interop
// tests. It is a single-file source program: Java 11+ runs it directly with
//
//	java -cp <curator + zookeeper jars> CuratorRecipes.java <mode> <args...>
//
// The Go package internal/interop embeds this file and writes it to a
// temporary directory before running it.
//
// Protocol with the Go test (line based, UTF-8):
//
//   - Lines this program prints on stdout are protocol lines ("READY",
//     "ACQUIRED", "RELEASED", node paths). Diagnostics go to stderr.
//   - Lines the Go test writes on stdin are commands ("GO", or any line to
//     release a holder).
//   - Any exception prints "ERROR: ..." and a stack trace on stderr and exits 1.
//
// Modes:
//
//   mutex <connectString> <path> <iterations> <outFile> <holdMillis>
//       Connects, prints READY, then waits for a line "GO" on stdin, so the
//       Go test can start every contender and release them together. Then
//       acquires InterProcessMutex(path) <iterations> times; for each hold it
//       appends "start end" to outFile, both wall-clock epoch nanoseconds
//       (comparable with Go's time.Now().UnixNano() and Python's
//       time.time_ns()), start taken right after acquire() returned and end
//       right before release(), holding for holdMillis in between. Each line
//       is flushed as it is written, so a killed process leaves its holds on
//       record. Finally writes "done <iterations>" and exits 0.
//
//   participants <connectString> <path>
//       Prints InterProcessMutex(path).getParticipantNodes(), one per line,
//       in Curator's order, and exits 0.
//
//   holder <connectString> <path>
//       Acquires InterProcessMutex(path), prints ACQUIRED, waits for any line
//       (or EOF) on stdin, releases, prints RELEASED and exits 0.
//
//   doublebarrier <connectString> <path> <memberQty>
//       One DistributedDoubleBarrier member: prints READY, waits for the
//       line ENTER, enters, prints ENTERED, waits for LEAVE, leaves, prints
//       LEFT and exits 0.
//
//   rwlock <connectString> <path> <read|write> <iterations> <outFile> <holdMillis>
//       As mutex, with InterProcessReadWriteLock(path).readLock() or
//       .writeLock(): prints READY, waits for GO, and records every hold.
//
//   rwparticipants <connectString> <path>
//       Prints the nodes of InterProcessReadWriteLock(path), one per line,
//       each tagged with where it comes from:
//         "READ <node>"  readLock().getParticipantNodes(), which in Curator
//                        5.4 is every child sorted by the lock's driver and
//                        then filtered to the names containing "__READ__";
//         "WRITE <node>" writeLock().getParticipantNodes(), the same for
//                        "__WRIT__";
//         "ALL <node>"   every child in the order the read lock's driver
//                        sorts them (the list its getsTheLock is given),
//                        read through reflection, since Curator exports
//                        no unfiltered list.
//
//   rwholder <connectString> <path> <read|write>
//       Prints "SESSION 0x<session id in hex>", acquires the read or write
//       lock of InterProcessReadWriteLock(path), prints ACQUIRED, waits for
//       any line (or EOF) on stdin, releases, prints RELEASED and exits 0.
//
//   rwdowngrade <connectString> <path>
//       Curator's own downgrade: prints "CURATOR-621-FIXED true" when this
//       Curator's read lock takes the write node's sequence on a downgrade
//       (the fix released in 5.5.0), else "CURATOR-621-FIXED false"; then
//       acquires the write lock, prints WRITE-ACQUIRED, waits for a stdin
//       line, acquires the read lock in
//       the same thread, releases the write lock, prints DOWNGRADED, waits
//       for a stdin line (or EOF), releases the read lock, prints RELEASED.
//
//   semaphore <connectString> <path> <maxLeases> <iterations> <outFile> <holdMillis>
//       As mutex, with InterProcessSemaphoreV2(path, maxLeases): prints
//       READY, waits for GO, then acquires one lease <iterations> times,
//       recording each hold as "start end" in outFile (start right after
//       acquire() returned, end right before returnLease()), and writes
//       "done <iterations>".
//
//   semholder <connectString> <path> <maxLeases> <qty>
//       Acquires qty leases of InterProcessSemaphoreV2(path, maxLeases)
//       (waiting as long as it takes), prints "LEASE <node name>" for each
//       and ACQUIRED, waits for any line (or EOF) on stdin, returns them all,
//       prints RELEASED and exits 0.
//
//   semaphore-v1 <connectString> <path> <maxLeases> <iterations> <outFile> <holdMillis>
//   semholder-v1 <connectString> <path> <maxLeases> <qty>
//       As semaphore and semholder, with Curator's deprecated
//       InterProcessSemaphore (v1) instead of InterProcessSemaphoreV2.
//
//   semholder-v1-count <connectString> <path> <countPath> <qty>
//       As semholder-v1, with InterProcessSemaphore(path, SharedCount(countPath,
//       seed 0)): the maximum is the shared count's value, followed as it
//       changes.
//
//   sharder <connectString> <queuePath> <leaderPath> <threshold> <checkMs> <maxQueues>
//       A QueueSharder of producer-only DistributedQueues (string items)
//       with those policies: starts it, then prints "SHARDS <paths>" (its
//       getQueuePaths(), sorted, space-separated) and READY, then "SHARDS
//       <paths>" again whenever they change (looked at every 20 ms). A stdin line "PUT <n>"
//       puts n items into getQueue() and prints "PUT <n>"; "close" (or EOF)
//       closes the sharder, prints CLOSED and exits 0.
//
//   sharedcount-get <connectString> <path> [<path>...]
//       For each path, starts SharedCount(path, seed 0) (which creates the
//       node with the seed only if it is missing) and prints
//       "<value> <version>" from its getVersionedValue(); exits 0.
//
//   sharedcount-set <connectString> <path> <value> [<path> <value>...]
//       For each pair, starts SharedCount(path, seed 0), calls
//       setCount(value) and prints "SET <path> <value>"; exits 0.
//
//   atomiclong <connectString> <path> <threads> <iterations> <lockPath|->
//       DistributedAtomicLong(path) with BoundedExponentialBackoffRetry(5,
//       50, 20); or, unless lockPath is "-", with RetryNTimes(1, 1) (two
//       optimistic tries) promoted to an InterProcessMutex at lockPath
//       (PromotedToLock, maxLockTime 10s, BoundedExponentialBackoffRetry(5,
//       50, 20)). Prints READY, waits for GO, then <threads> threads each
//       call increment() until <iterations> calls have succeeded, calling
//       again after every call whose succeeded() is false. Prints
//       "DONE <succeeded calls> <failed calls> <promoted tries>" and exits 0.
//
//   atomiclong-sessions <connectString> <path> <sessions> <calls> <baseMs> <maxRetries>
//       <sessions> clients (sessions), one thread each, each with
//       DistributedAtomicLong(path, ExponentialBackoffRetry(baseMs,
//       maxRetries)), optimistic only. Prints READY, waits for GO, then
//       each thread calls increment() exactly <calls> times. Prints "DONE
//       <succeeded calls> <calls that gave up> <optimistic tries>" and
//       exits 0.
//
//   atomiclong-get <connectString> <path> [<path>...]
//       Prints DistributedAtomicLong(path).get().postValue() for each path.
//
//   atomicint-add <connectString> <path> <delta>
//       DistributedAtomicInteger(path).add(delta), once; prints
//       "ADDED <preValue> <postValue>", or exits 1 if it did not succeed.
//
//   latch <connectString> <path> <id>
//       Starts LeaderLatch(path, id, CloseMode.NOTIFY_LEADER) with a
//       listener that prints "LEADER <nanos>" from isLeader and
//       "NOTLEADER <nanos>" from notLeader (wall-clock epoch nanoseconds);
//       once the latch node exists prints "NODE <node path>". Then serves
//       stdin commands:
//         "LEADER? <n>"  prints "ANSWER <n> <leader> <has> <ids>": leader is
//                        getLeader().getId() ("-" when empty), has is
//                        hasLeadership(), ids are the ids of
//                        getParticipants() in Curator's order joined by
//                        commas ("-" when none);
//         "close"        prints "CLOSING <nanos>", closes the latch (which
//                        deletes the node and then calls notLeader if it
//                        led), prints "CLOSED" and exits 0.
//       EOF closes the latch likewise, silently.
//
//   selector <connectString> <path> <id> <iterations> <outFile> <holdMillis>
//       LeaderSelector(path) with setId(id) and autoRequeue(): prints READY,
//       waits for GO, starts. Each takeLeadership appends "start end" to
//       outFile (start on entry, end right before it returns, so before
//       Curator releases the mutex), holding for holdMillis, until
//       <iterations> have been counted; a term after that holds until the
//       selector is closed (it is closed as soon as the count is reached)
//       and is recorded too. Writes "done <terms recorded>", prints DONE.
//
//   selholder <connectString> <path> <id>
//       LeaderSelector(path) with setId(id), without autoRequeue, started at
//       once; prints STARTED. takeLeadership prints "LEADING <nanos>" and
//       holds until told; stdin commands:
//         "LEADER? <n>"  answers as in latch mode, with the selector's
//                        getLeader(), hasLeadership() and getParticipants();
//         "release"      ends the running term: takeLeadership prints
//                        "RELEASING <nanos>" and returns (Curator then
//                        releases its mutex node);
//         "close"        closes the selector, prints CLOSED and exits 0.
//
//   queue-produce <connectString> <kind> <path> <count>
//       Puts count items "j00", "j01", ... with Curator's queue of that
//       kind: simple (SimpleDistributedQueue.offer), plain
//       (DistributedQueue.put, then one putMulti of "jm1" and "jm2"), id
//       (DistributedIdQueue.put with id "job/<i mod 3>"), priority
//       (DistributedPriorityQueue.put with priority count-i, so the last
//       item is the most urgent), delay (DistributedDelayQueue.put, item
//       i due 500+i ms from now: a due time each). Puts in the
//       foreground; prints PUT and exits 0.
//
//   queue-consume <connectString> <kind> <path> <count> <lockPath|-> <hang>
//       Consumes with Curator's queue of that kind (simple: take() count
//       times), in lock-safety mode unless lockPath is "-". Prints READY,
//       then "ITEM <item>" for each item (UTF-8), and DONE once count
//       items came, then exits 0. With hang 1 the first item is printed as
//       "HOLDING <item>" instead, and the consumer never returns from it
//       (for a test that SIGKILLs it mid-item).
//   cache <connectString> <path>
//       Starts CuratorCache.build(client, path) with a listener on every
//       event. Each event prints "EVENT <TYPE> <path> <version>" (TYPE is
//       NODE_CREATED, NODE_CHANGED or NODE_DELETED; for a deletion the path
//       and version are the old node's), in the order Curator's listener
//       thread delivers them; the initialised callback prints INITIALIZED.
//       Stdin commands:
//         "DUMP <n>"  prints "BEGIN <n>", then "NODE <path> <version>
//                     <mzxid> <hex data>" for every node the cache holds,
//                     sorted by path ("-" for empty data), then "END <n>";
//         "close"     closes the cache and the client, prints CLOSED,
//                     exits 0 (EOF does the same, silently).
//
//   write <connectString>
//       A plain writer for the cache tests: prints READY, then runs one
//       stdin command at a time, in order, each answered by one line:
//         "create <path> <data>", "set <path> <data>", "delete <path>"
//             ("-" for empty data) answer "OK <n>" or "FAIL <n> <code>"
//             (n counts the commands from 1; code is the KeeperException
//             code, e.g. NONODE, NODEEXISTS, NOTEMPTY);
//         "SYNC <n>"  answers "SYNCED <n>" once every earlier command is
//                     answered;
//         "close" or EOF closes the client and exits 0.
//   groupmember <connectString> <path> <id> <payload>
//       Starts GroupMember(path, id, payload as UTF-8) and prints STARTED.
//       stdin commands: "MEMBERS? <n>" prints "MEMBERS <n> <list>", the
//       list being getCurrentMembers() as id=payload sorted by id and
//       joined by commas; "close" closes the member, prints CLOSED and
//       exits 0 (as does EOF, silently).
//
//   persistentnode <connectString> <path> <mode> <data>
//       Starts PersistentNode(mode as CreateMode's name, not protected,
//       path, data as UTF-8), waits for its initial create (10 s) and
//       prints "NODE <actual path>"; "close" (or EOF) closes it, prints
//       CLOSED.
//
//   ttlnode <connectString> <path> <ttlMs> <data>
//       Starts PersistentTtlNode(path, ttlMs, data) (Curator 5.4-5.8: a
//       CONTAINER parent; 5.9: a TTL parent), prints STARTED once the
//       parent exists; "close" (or EOF) closes it, prints CLOSED.
//
//   layout <connectString> <root>
//       Lays out one of each recipe under root, as Curator lays them out,
//       for zkinspect's golden test, and holds it until stdin ends:
//         mutex           InterProcessMutex held, a second one waiting;
//         rwlock          a read lock held, a write lock waiting;
//         semaphore       InterProcessSemaphoreV2 (1 lease) held, a second
//                         acquirer waiting (it holds the internal lock);
//         latch           LeaderLatch ids curator-latch-1 (leader) and -2;
//         selector        LeaderSelector ids curator-selector-1 (leading)
//                         and -2;
//         count           SharedCount seeded 7;
//         atomic-long     DistributedAtomicLong incremented once, promoted
//                         to the lock atomic-long-lock, which is held (a
//                         promotion in flight);
//         barrier         DistributedBarrier set;
//         double-barrier  DistributedDoubleBarrier of 2, one member in;
//         queue           DistributedQueue with two items, no consumer;
//         queue-ls        DistributedQueue with two items in lock-safety
//                         mode (lockPath queue-ls-lock), a consumer
//                         holding the first;
//         simple-queue    SimpleDistributedQueue with two items;
//         persistent-node PersistentNode (PERSISTENT, data "pnode");
//         group           GroupMember curator-member.
//       Prints LAYOUT once every node is there.
//
// To add a mode (rwlock, semaphore, leader latch...), write a static method
// with the Mode signature and register it in MODES.

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.zookeeper.CreateMode;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.zookeeper.KeeperException;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.LockInternals;
import org.apache.curator.framework.recipes.locks.LockInternalsSorter;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphore;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicInteger;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedIdQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.MultiItem;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.QueueSharder;
import org.apache.curator.framework.recipes.queue.QueueSharderPolicies;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

public class CuratorRecipes {
    static final int SESSION_TIMEOUT_MS = 4000;
    static final int CONNECTION_TIMEOUT_MS = 3000;
    static final int CONNECT_WAIT_SECONDS = 30;

    /** A mode receives the arguments after the mode name. */
    interface Mode {
        void run(String[] args) throws Exception;
    }

    static final Map<String, Mode> MODES = new LinkedHashMap<>();
    static final Map<String, String> USAGE = new LinkedHashMap<>();

    static {
        register("mutex", "<connectString> <path> <iterations> <outFile> <holdMillis>", CuratorRecipes::mutex);
        register("participants", "<connectString> <path>", CuratorRecipes::participants);
        register("holder", "<connectString> <path>", CuratorRecipes::holder);
        register("rwlock", "<connectString> <path> <read|write> <iterations> <outFile> <holdMillis>", CuratorRecipes::rwlock);
        register("rwparticipants", "<connectString> <path>", CuratorRecipes::rwparticipants);
        register("rwholder", "<connectString> <path> <read|write>", CuratorRecipes::rwholder);
        register("rwdowngrade", "<connectString> <path>", CuratorRecipes::rwdowngrade);
        register("semaphore", "<connectString> <path> <maxLeases> <iterations> <outFile> <holdMillis>", CuratorRecipes::semaphore);
        register("semholder", "<connectString> <path> <maxLeases> <qty>", CuratorRecipes::semholder);
        register("semaphore-v1", "<connectString> <path> <maxLeases> <iterations> <outFile> <holdMillis>", CuratorRecipes::semaphoreV1);
        register("semholder-v1", "<connectString> <path> <maxLeases> <qty>", CuratorRecipes::semholderV1);
        register("semholder-v1-count", "<connectString> <path> <countPath> <qty>", CuratorRecipes::semholderV1Count);
        register("sharder", "<connectString> <queuePath> <leaderPath> <threshold> <checkMs> <maxQueues>", CuratorRecipes::sharder);
        register("sharedcount-get", "<connectString> <path> [<path>...]", CuratorRecipes::sharedcountGet);
        register("sharedcount-set", "<connectString> <path> <value> [<path> <value>...]", CuratorRecipes::sharedcountSet);
        register("atomiclong", "<connectString> <path> <threads> <iterations> <lockPath|->", CuratorRecipes::atomiclong);
        register("atomiclong-sessions", "<connectString> <path> <sessions> <calls> <baseMs> <maxRetries>", CuratorRecipes::atomiclongSessions);
        register("atomiclong-get", "<connectString> <path> [<path>...]", CuratorRecipes::atomiclongGet);
        register("sharedcount-incr", "<connectString> <path> <iterations>", CuratorRecipes::sharedcountIncr);
        register("atomicint", "<connectString> <path> <iterations>", CuratorRecipes::atomicint);
        register("atomicint-add", "<connectString> <path> <delta>", CuratorRecipes::atomicintAdd);
        register("latch", "<connectString> <path> <id>", CuratorRecipes::latch);
        register("selector", "<connectString> <path> <id> <iterations> <outFile> <holdMillis>", CuratorRecipes::selector);
        register("selholder", "<connectString> <path> <id>", CuratorRecipes::selholder);
        register("doublebarrier", "<connectString> <path> <memberQty>", CuratorRecipes::doublebarrier);
        register("queue-produce", "<connectString> <kind> <path> <count>", CuratorRecipes::queueProduce);
        register("queue-consume", "<connectString> <kind> <path> <count> <lockPath|-> <hang>", CuratorRecipes::queueConsume);
        register("cache", "<connectString> <path>", CuratorRecipes::cache);
        register("write", "<connectString>", CuratorRecipes::write);
        register("groupmember", "<connectString> <path> <id> <payload>", CuratorRecipes::groupmember);
        register("persistentnode", "<connectString> <path> <mode> <data>", CuratorRecipes::persistentnode);
        register("ttlnode", "<connectString> <path> <ttlMs> <data>", CuratorRecipes::ttlnode);
        register("layout", "<connectString> <root>", CuratorRecipes::layout);
    }

    static void register(String name, String usage, Mode mode) {
        MODES.put(name, mode);
        USAGE.put(name, usage);
    }

    static final BufferedReader STDIN =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    public static void main(String[] args) {
        int code = 0;
        try {
            if (args.length == 0 || !MODES.containsKey(args[0])) {
                throw new IllegalArgumentException("unknown mode; usage:\n" + usage());
            }
            MODES.get(args[0]).run(Arrays.copyOfRange(args, 1, args.length));
        } catch (Throwable t) {
            System.err.println("ERROR: " + t);
            t.printStackTrace(System.err);
            code = 1;
        }
        System.out.flush();
        System.err.flush();
        // Exit explicitly: client threads must not keep the JVM alive.
        System.exit(code);
    }

    static String usage() {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, String> e : USAGE.entrySet()) {
            b.append("  CuratorRecipes ").append(e.getKey()).append(' ').append(e.getValue()).append('\n');
        }
        return b.toString();
    }

    static void need(String[] args, int n, String mode) {
        if (args.length != n) {
            throw new IllegalArgumentException(
                    mode + " wants " + n + " arguments: " + USAGE.get(mode) + "; got " + Arrays.toString(args));
        }
    }

    /** Wall-clock epoch nanoseconds, comparable across Go, Java and Python. */
    static long nowNanos() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Reads one stdin line; null on EOF. */
    static String readLine() throws IOException {
        return STDIN.readLine();
    }

    static void awaitLine(String want) throws IOException {
        for (;;) {
            String line = readLine();
            if (line == null) {
                throw new IOException("stdin closed while waiting for " + want);
            }
            if (line.trim().equals(want)) {
                return;
            }
        }
    }

    static CuratorFramework connect(String connectString) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
                connectString, SESSION_TIMEOUT_MS, CONNECTION_TIMEOUT_MS, new ExponentialBackoffRetry(100, 10));
        client.start();
        if (!client.blockUntilConnected(CONNECT_WAIT_SECONDS, TimeUnit.SECONDS)) {
            client.close();
            throw new IOException("not connected to " + connectString + " after " + CONNECT_WAIT_SECONDS + "s");
        }
        return client;
    }

    /** The read or write lock of rw, by name. */
    static InterProcessMutex rwSide(InterProcessReadWriteLock rw, String which) {
        switch (which) {
            case "read":
                return rw.readLock();
            case "write":
                return rw.writeLock();
            default:
                throw new IllegalArgumentException("want read or write, not " + which);
        }
    }

    /**
     * Acquires lock iterations times, holding for holdMillis, and appends
     * "start end" per hold and "done iterations" to out.
     */
    static void recordHolds(InterProcessMutex lock, int iterations, long holdMillis, BufferedWriter out)
            throws Exception {
        for (int i = 0; i < iterations; i++) {
            lock.acquire();
            long start = nowNanos();
            long end;
            try {
                if (holdMillis > 0) {
                    Thread.sleep(holdMillis);
                }
                end = nowNanos();
            } finally {
                lock.release();
            }
            out.write(start + " " + end + "\n");
            out.flush();
        }
        out.write("done " + iterations + "\n");
        out.flush();
    }

    static void mutex(String[] args) throws Exception {
        need(args, 5, "mutex");
        String connect = args[0];
        String path = args[1];
        int iterations = Integer.parseInt(args[2]);
        String outFile = args[3];
        long holdMillis = Long.parseLong(args[4]);
        try (CuratorFramework client = connect(connect);
                BufferedWriter out = new BufferedWriter(new FileWriter(outFile, StandardCharsets.UTF_8, true))) {
            InterProcessMutex lock = new InterProcessMutex(client, path);
            say("READY");
            awaitLine("GO");
            recordHolds(lock, iterations, holdMillis, out);
        }
    }

    static void participants(String[] args) throws Exception {
        need(args, 2, "participants");
        try (CuratorFramework client = connect(args[0])) {
            InterProcessMutex lock = new InterProcessMutex(client, args[1]);
            Collection<String> nodes = lock.getParticipantNodes();
            StringBuilder b = new StringBuilder();
            for (String n : nodes) {
                b.append(n).append('\n');
            }
            System.out.print(b);
            System.out.flush();
        }
    }

    static void holder(String[] args) throws Exception {
        need(args, 2, "holder");
        try (CuratorFramework client = connect(args[0])) {
            InterProcessMutex lock = new InterProcessMutex(client, args[1]);
            lock.acquire();
            say("ACQUIRED");
            readLine(); // any line, or EOF, releases
            lock.release();
            say("RELEASED");
        }
    }

    /**
     * doublebarrier: one DistributedDoubleBarrier member. Prints READY,
     * waits for "ENTER", enters (no timeout), prints ENTERED, waits for
     * "LEAVE", leaves, prints LEFT.
     */
    static final QueueSerializer<String> UTF8 = new QueueSerializer<String>() {
        @Override
        public byte[] serialize(String item) {
            return item.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String deserialize(byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    /**
     * Waits until at most keep of the locks under lockPath belong to the
     * client's session (a lock-safety consumer's items are then deleted).
     */
    static void awaitOwnLocksGone(CuratorFramework client, String lockPath, int keep) throws Exception {
        long sid = client.getZookeeperClient().getZooKeeper().getSessionId();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (;;) {
            int own = 0;
            try {
                for (String child : client.getChildren().forPath(lockPath)) {
                    org.apache.zookeeper.data.Stat st = client.checkExists().forPath(lockPath + "/" + child);
                    if (st != null && st.getEphemeralOwner() == sid) {
                        own++;
                    }
                }
            } catch (KeeperException.NoNodeException e) {
                // no locks at all
            }
            if (own <= keep) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(own + " locks of ours still under " + lockPath + " after 30s");
            }
            Thread.sleep(10);
        }
    }

    static QueueBuilder<String> queueBuilder(CuratorFramework client, QueueConsumer<String> consumer, String path, String lockPath) {
        QueueBuilder<String> b = QueueBuilder.builder(client, consumer, UTF8, path).putInBackground(false);
        if (!lockPath.equals("-")) {
            b = b.lockPath(lockPath);
        }
        return b;
    }

    static void sharder(String[] args) throws Exception {
        need(args, 6, "sharder");
        QueueSharderPolicies policies = QueueSharderPolicies.builder()
                .newQueueThreshold(Integer.parseInt(args[3]))
                .thresholdCheckMs(Integer.parseInt(args[4]))
                .maxQueues(Integer.parseInt(args[5]))
                .build();
        try (CuratorFramework client = connect(args[0])) {
            QueueSharder<String, DistributedQueue<String>> sharder = new QueueSharder<>(
                    client, (c, p) -> queueBuilder(c, null, p, "-").buildQueue(), args[1], args[2], policies);
            sharder.start();
            String initial = "SHARDS " + String.join(" ", new TreeSet<>(sharder.getQueuePaths()));
            say(initial);
            Thread watcher = new Thread(() -> {
                String last = initial;
                while (true) {
                    String now = "SHARDS " + String.join(" ", new TreeSet<>(sharder.getQueuePaths()));
                    if (!now.equals(last)) {
                        say(now);
                        last = now;
                    }
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            watcher.setDaemon(true);
            watcher.start();
            say("READY");
            for (String line; (line = readLine()) != null && !line.trim().equals("close"); ) {
                String[] f = line.trim().split(" ");
                if (f[0].equals("PUT")) {
                    DistributedQueue<String> q = sharder.getQueue();
                    for (int i = 0; i < Integer.parseInt(f[1]); i++) {
                        q.put("c" + i);
                    }
                    say("PUT " + f[1]);
                }
            }
            watcher.interrupt();
            sharder.close();
            say("CLOSED");
        }
    }

    static void queueProduce(String[] args) throws Exception {
        need(args, 4, "queue-produce");
        String kind = args[1];
        String path = args[2];
        int count = Integer.parseInt(args[3]);
        try (CuratorFramework client = connect(args[0])) {
            switch (kind) {
                case "simple": {
                    SimpleDistributedQueue q = new SimpleDistributedQueue(client, path);
                    for (int i = 0; i < count; i++) {
                        q.offer(String.format("j%02d", i).getBytes(StandardCharsets.UTF_8));
                    }
                    break;
                }
                case "plain": {
                    DistributedQueue<String> q = queueBuilder(client, null, path, "-").buildQueue();
                    q.start();
                    for (int i = 0; i < count; i++) {
                        q.put(String.format("j%02d", i));
                    }
                    final String[] multi = {"jm1", "jm2"};
                    final int[] at = {0};
                    q.putMulti(new MultiItem<String>() {
                        @Override
                        public String nextItem() {
                            return at[0] < multi.length ? multi[at[0]++] : null;
                        }
                    });
                    q.close();
                    break;
                }
                case "id": {
                    DistributedIdQueue<String> q = queueBuilder(client, null, path, "-").buildIdQueue();
                    q.start();
                    for (int i = 0; i < count; i++) {
                        q.put(String.format("j%02d", i), "job/" + (i % 3));
                    }
                    q.close();
                    break;
                }
                case "priority": {
                    DistributedPriorityQueue<String> q = queueBuilder(client, null, path, "-").buildPriorityQueue(0);
                    q.start();
                    for (int i = 0; i < count; i++) {
                        q.put(String.format("j%02d", i), count - i);
                    }
                    q.close();
                    break;
                }
                case "delay": {
                    DistributedDelayQueue<String> q = queueBuilder(client, null, path, "-").buildDelayQueue();
                    q.start();
                    long due = System.currentTimeMillis() + 500;
                    for (int i = 0; i < count; i++) {
                        q.put(String.format("j%02d", i), due + i);
                    }
                    q.close();
                    break;
                }
                default:
                    throw new IllegalArgumentException("queue kind " + kind);
            }
            say("PUT");
        }
    }

    static void queueConsume(String[] args) throws Exception {
        need(args, 6, "queue-consume");
        String kind = args[1];
        String path = args[2];
        int count = Integer.parseInt(args[3]);
        String lockPath = args[4];
        boolean hang = args[5].equals("1");
        try (CuratorFramework client = connect(args[0])) {
            if (kind.equals("simple")) {
                SimpleDistributedQueue q = new SimpleDistributedQueue(client, path);
                say("READY");
                for (int i = 0; i < count; i++) {
                    say("ITEM " + new String(q.take(), StandardCharsets.UTF_8));
                }
                say("DONE");
                return;
            }
            CountDownLatch done = new CountDownLatch(count);
            final boolean[] first = {true};
            QueueConsumer<String> consumer = new QueueConsumer<String>() {
                @Override
                public void consumeMessage(String item) throws Exception {
                    synchronized (first) {
                        if (hang && first[0]) {
                            first[0] = false;
                            say("HOLDING " + item);
                            new CountDownLatch(1).await();
                        }
                    }
                    say("ITEM " + item);
                    done.countDown();
                }

                @Override
                public void stateChanged(CuratorFramework c, ConnectionState s) {}
            };
            QueueBuilder<String> b = queueBuilder(client, consumer, path, lockPath);
            java.io.Closeable q;
            switch (kind) {
                case "plain": {
                    DistributedQueue<String> dq = b.buildQueue();
                    dq.start();
                    q = dq;
                    break;
                }
                case "id": {
                    DistributedIdQueue<String> dq = b.buildIdQueue();
                    dq.start();
                    q = dq;
                    break;
                }
                case "priority": {
                    DistributedPriorityQueue<String> dq = b.buildPriorityQueue(0);
                    dq.start();
                    q = dq;
                    break;
                }
                case "delay": {
                    DistributedDelayQueue<String> dq = b.buildDelayQueue();
                    dq.start();
                    q = dq;
                    break;
                }
                default:
                    throw new IllegalArgumentException("queue kind " + kind);
            }
            say("READY");
            done.await();
            if (!lockPath.equals("-")) {
                // In lock-safety mode Curator deletes an item after its
                // consumeMessage returns, then its lock: wait for that, or
                // close would interrupt the last item's delete.
                awaitOwnLocksGone(client, lockPath, hang ? 1 : 0);
            }
            say("DONE");
            q.close();
        }
    }

    static void doublebarrier(String[] args) throws Exception {
        need(args, 3, "doublebarrier");
        try (CuratorFramework client = connect(args[0])) {
            DistributedDoubleBarrier b = new DistributedDoubleBarrier(client, args[1], Integer.parseInt(args[2]));
            say("READY");
            awaitLine("ENTER");
            b.enter();
            say("ENTERED");
            awaitLine("LEAVE");
            b.leave();
            say("LEFT");
        }
    }

    static void rwlock(String[] args) throws Exception {
        need(args, 6, "rwlock");
        String connect = args[0];
        String path = args[1];
        String which = args[2];
        int iterations = Integer.parseInt(args[3]);
        String outFile = args[4];
        long holdMillis = Long.parseLong(args[5]);
        try (CuratorFramework client = connect(connect);
                BufferedWriter out = new BufferedWriter(new FileWriter(outFile, StandardCharsets.UTF_8, true))) {
            InterProcessMutex lock = rwSide(new InterProcessReadWriteLock(client, path), which);
            say("READY");
            awaitLine("GO");
            recordHolds(lock, iterations, holdMillis, out);
        }
    }

    static void rwparticipants(String[] args) throws Exception {
        need(args, 2, "rwparticipants");
        try (CuratorFramework client = connect(args[0])) {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, args[1]);
            StringBuilder b = new StringBuilder();
            for (String n : rw.readLock().getParticipantNodes()) {
                b.append("READ ").append(n).append('\n');
            }
            for (String n : rw.writeLock().getParticipantNodes()) {
                b.append("WRITE ").append(n).append('\n');
            }
            // The read lock's own driver and lock name, as its getsTheLock
            // sees the children (InterProcessMutex.internals is private,
            // LockInternals.getDriver and getLockName package-private).
            Field f = InterProcessMutex.class.getDeclaredField("internals");
            f.setAccessible(true);
            LockInternals internals = (LockInternals) f.get(rw.readLock());
            Method driver = LockInternals.class.getDeclaredMethod("getDriver");
            driver.setAccessible(true);
            Method lockName = LockInternals.class.getDeclaredMethod("getLockName");
            lockName.setAccessible(true);
            Collection<String> all = LockInternals.getParticipantNodes(client, args[1],
                    (String) lockName.invoke(internals), (LockInternalsSorter) driver.invoke(internals));
            for (String n : all) {
                b.append("ALL ").append(n).append('\n');
            }
            System.out.print(b);
            System.out.flush();
        }
    }

    static void rwholder(String[] args) throws Exception {
        need(args, 3, "rwholder");
        try (CuratorFramework client = connect(args[0])) {
            InterProcessMutex lock = rwSide(new InterProcessReadWriteLock(client, args[1]), args[2]);
            say("SESSION 0x" + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId()));
            lock.acquire();
            say("ACQUIRED");
            readLine(); // any line, or EOF, releases
            lock.release();
            say("RELEASED");
        }
    }

    static void rwdowngrade(String[] args) throws Exception {
        need(args, 2, "rwdowngrade");
        try (CuratorFramework client = connect(args[0])) {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, args[1]);
            boolean fixed;
            try {
                StandardLockInternalsDriver.class.getDeclaredMethod("getSortingSequence");
                fixed = true;
            } catch (NoSuchMethodException e) {
                fixed = false;
            }
            say("CURATOR-621-FIXED " + fixed);
            rw.writeLock().acquire();
            say("WRITE-ACQUIRED");
            awaitAny();
            rw.readLock().acquire();
            rw.writeLock().release();
            say("DOWNGRADED");
            readLine(); // any line, or EOF, releases
            rw.readLock().release();
            say("RELEASED");
        }
    }

    /** Waits for any stdin line; EOF is an error. */
    static void awaitAny() throws IOException {
        if (readLine() == null) {
            throw new IOException("stdin closed");
        }
    }

    /** One way to take leases: InterProcessSemaphoreV2's or InterProcessSemaphore's acquire(qty). */
    interface Semaphore {
        Collection<Lease> acquire(int qty) throws Exception;
    }

    static Semaphore semV2(CuratorFramework client, String path, int maxLeases) {
        return new InterProcessSemaphoreV2(client, path, maxLeases)::acquire;
    }

    @SuppressWarnings("deprecation")
    static Semaphore semV1(CuratorFramework client, String path, int maxLeases) {
        return new InterProcessSemaphore(client, path, maxLeases)::acquire;
    }

    static void returnAll(Collection<Lease> leases) throws IOException {
        for (Lease l : leases) {
            l.close();
        }
    }

    static void semaphore(String[] args) throws Exception {
        need(args, 6, "semaphore");
        semaphoreLoop(args, CuratorRecipes::semV2);
    }

    static void semaphoreV1(String[] args) throws Exception {
        need(args, 6, "semaphore-v1");
        semaphoreLoop(args, CuratorRecipes::semV1);
    }

    interface SemaphoreMaker {
        Semaphore make(CuratorFramework client, String path, int maxLeases) throws Exception;
    }

    static void semaphoreLoop(String[] args, SemaphoreMaker maker) throws Exception {
        String connect = args[0];
        String path = args[1];
        int maxLeases = Integer.parseInt(args[2]);
        int iterations = Integer.parseInt(args[3]);
        String outFile = args[4];
        long holdMillis = Long.parseLong(args[5]);
        try (CuratorFramework client = connect(connect);
                BufferedWriter out = new BufferedWriter(new FileWriter(outFile, StandardCharsets.UTF_8, true))) {
            Semaphore sem = maker.make(client, path, maxLeases);
            say("READY");
            awaitLine("GO");
            for (int i = 0; i < iterations; i++) {
                Collection<Lease> lease = sem.acquire(1);
                long start = nowNanos();
                long end;
                try {
                    if (holdMillis > 0) {
                        Thread.sleep(holdMillis);
                    }
                    end = nowNanos();
                } finally {
                    returnAll(lease);
                }
                out.write(start + " " + end + "\n");
                out.flush();
            }
            out.write("done " + iterations + "\n");
            out.flush();
        }
    }

    static void semholder(String[] args) throws Exception {
        need(args, 4, "semholder");
        try (CuratorFramework client = connect(args[0])) {
            holdLeases(semV2(client, args[1], Integer.parseInt(args[2])), Integer.parseInt(args[3]));
        }
    }

    static void semholderV1(String[] args) throws Exception {
        need(args, 4, "semholder-v1");
        try (CuratorFramework client = connect(args[0])) {
            holdLeases(semV1(client, args[1], Integer.parseInt(args[2])), Integer.parseInt(args[3]));
        }
    }

    @SuppressWarnings("deprecation")
    static void semholderV1Count(String[] args) throws Exception {
        need(args, 4, "semholder-v1-count");
        try (CuratorFramework client = connect(args[0]);
                SharedCount count = new SharedCount(client, args[2], 0)) {
            count.start();
            InterProcessSemaphore sem = new InterProcessSemaphore(client, args[1], count);
            holdLeases(sem::acquire, Integer.parseInt(args[3]));
        }
    }

    /** Acquires qty leases, prints them and ACQUIRED, returns them on a stdin line (or EOF). */
    static void holdLeases(Semaphore sem, int qty) throws Exception {
        Collection<Lease> leases = sem.acquire(qty);
        StringBuilder b = new StringBuilder();
        for (Lease l : leases) {
            b.append("LEASE ").append(l.getNodeName()).append('\n');
        }
        System.out.print(b);
        say("ACQUIRED");
        readLine(); // any line, or EOF, releases
        returnAll(leases);
        say("RELEASED");
    }

    static void sharedcountGet(String[] args) throws Exception {
        if (args.length < 2) {
            need(args, 2, "sharedcount-get");
        }
        try (CuratorFramework client = connect(args[0])) {
            for (int i = 1; i < args.length; i++) {
                try (SharedCount count = new SharedCount(client, args[i], 0)) {
                    count.start();
                    VersionedValue<Integer> v = count.getVersionedValue();
                    say(v.getValue() + " " + v.getVersion());
                }
            }
        }
    }

    static void sharedcountSet(String[] args) throws Exception {
        if (args.length < 3 || args.length % 2 == 0) {
            need(args, 3, "sharedcount-set");
        }
        try (CuratorFramework client = connect(args[0])) {
            for (int i = 1; i < args.length; i += 2) {
                int value = Integer.parseInt(args[i + 1]);
                try (SharedCount count = new SharedCount(client, args[i], 0)) {
                    count.start();
                    count.setCount(value);
                    say("SET " + args[i] + " " + value);
                }
            }
        }
    }

    static void atomiclong(String[] args) throws Exception {
        need(args, 5, "atomiclong");
        int threads = Integer.parseInt(args[2]);
        int iterations = Integer.parseInt(args[3]);
        String lockPath = args[4];
        try (CuratorFramework client = connect(args[0])) {
            // Capped pauses: ExponentialBackoffRetry's grow without bound
            // (a call can take many seconds under contention).
            // Promoted: two optimistic tries, so that contention promotes.
            DistributedAtomicLong counter = lockPath.equals("-")
                    ? new DistributedAtomicLong(client, args[1], new BoundedExponentialBackoffRetry(5, 50, 20))
                    : new DistributedAtomicLong(client, args[1], new RetryNTimes(1, 1),
                            PromotedToLock.builder().lockPath(lockPath).timeout(10, TimeUnit.SECONDS)
                                    .retryPolicy(new BoundedExponentialBackoffRetry(5, 50, 20)).build());
            AtomicLong succeeded = new AtomicLong();
            AtomicLong failed = new AtomicLong();
            AtomicLong promoted = new AtomicLong();
            say("READY");
            awaitLine("GO");
            Thread[] workers = new Thread[threads];
            Throwable[] errors = new Throwable[threads];
            for (int t = 0; t < threads; t++) {
                final int me = t;
                workers[t] = new Thread(() -> {
                    try {
                        for (int done = 0; done < iterations;) {
                            AtomicValue<Long> v = counter.increment();
                            promoted.addAndGet(v.getStats().getPromotedLockTries());
                            if (v.succeeded()) {
                                done++;
                                succeeded.incrementAndGet();
                            } else {
                                failed.incrementAndGet();
                            }
                        }
                    } catch (Throwable e) {
                        errors[me] = e;
                    }
                });
                workers[t].start();
            }
            for (Thread w : workers) {
                w.join();
            }
            for (Throwable e : errors) {
                if (e != null) {
                    throw new Exception(e);
                }
            }
            say("DONE " + succeeded.get() + " " + failed.get() + " " + promoted.get());
        }
    }

    static void atomiclongSessions(String[] args) throws Exception {
        need(args, 6, "atomiclong-sessions");
        int sessions = Integer.parseInt(args[2]);
        int calls = Integer.parseInt(args[3]);
        int baseMs = Integer.parseInt(args[4]);
        int maxRetries = Integer.parseInt(args[5]);
        CuratorFramework[] clients = new CuratorFramework[sessions];
        Thread[] workers = new Thread[sessions];
        Throwable[] errors = new Throwable[sessions];
        AtomicLong succeeded = new AtomicLong(), gaveUp = new AtomicLong(), tries = new AtomicLong();
        CountDownLatch go = new CountDownLatch(1);
        try {
            for (int i = 0; i < sessions; i++) {
                clients[i] = connect(args[0]);
                DistributedAtomicLong counter =
                        new DistributedAtomicLong(clients[i], args[1], new ExponentialBackoffRetry(baseMs, maxRetries));
                final int me = i;
                workers[i] = new Thread(() -> {
                    try {
                        go.await();
                        for (int c = 0; c < calls; c++) {
                            AtomicValue<Long> v = counter.increment();
                            tries.addAndGet(v.getStats().getOptimisticTries());
                            (v.succeeded() ? succeeded : gaveUp).incrementAndGet();
                        }
                    } catch (Throwable e) {
                        errors[me] = e;
                    }
                });
                workers[i].start();
            }
            say("READY");
            awaitLine("GO");
            go.countDown();
            for (Thread w : workers) {
                w.join();
            }
        } finally {
            for (CuratorFramework c : clients) {
                if (c != null) {
                    c.close();
                }
            }
        }
        for (Throwable e : errors) {
            if (e != null) {
                throw new Exception(e);
            }
        }
        say("DONE " + succeeded.get() + " " + gaveUp.get() + " " + tries.get());
    }

    static void atomiclongGet(String[] args) throws Exception {
        if (args.length < 2) {
            need(args, 2, "atomiclong-get");
        }
        try (CuratorFramework client = connect(args[0])) {
            for (int i = 1; i < args.length; i++) {
                AtomicValue<Long> v = new DistributedAtomicLong(client, args[i], new ExponentialBackoffRetry(10, 10)).get();
                say(String.valueOf(v.postValue()));
            }
        }
    }

    /**
     * READY, waits for GO, then adds 1 to a SharedCount <iterations> times
     * with trySetCount from the cached versioned value (which a lost try
     * reads again); DONE <iterations> <lost tries>.
     */
    static void sharedcountIncr(String[] args) throws Exception {
        need(args, 3, "sharedcount-incr");
        int iterations = Integer.parseInt(args[2]);
        try (CuratorFramework client = connect(args[0]);
                SharedCount count = new SharedCount(client, args[1], 0)) {
            count.start();
            say("READY");
            awaitLine("GO");
            long lost = 0;
            for (int done = 0; done < iterations;) {
                VersionedValue<Integer> v = count.getVersionedValue();
                if (count.trySetCount(v, v.getValue() + 1)) {
                    done++;
                } else {
                    lost++;
                }
            }
            say("DONE " + iterations + " " + lost);
        }
    }

    /**
     * READY, waits for GO, then increments a DistributedAtomicInteger
     * <iterations> times (calling again after a call that did not
     * succeed); DONE <iterations> <failed calls>.
     */
    static void atomicint(String[] args) throws Exception {
        need(args, 3, "atomicint");
        int iterations = Integer.parseInt(args[2]);
        try (CuratorFramework client = connect(args[0])) {
            DistributedAtomicInteger counter =
                    new DistributedAtomicInteger(client, args[1], new BoundedExponentialBackoffRetry(5, 50, 20));
            say("READY");
            awaitLine("GO");
            long failed = 0;
            for (int done = 0; done < iterations;) {
                if (counter.increment().succeeded()) {
                    done++;
                } else {
                    failed++;
                }
            }
            say("DONE " + iterations + " " + failed);
        }
    }

    static void atomicintAdd(String[] args) throws Exception {
        need(args, 3, "atomicint-add");
        try (CuratorFramework client = connect(args[0])) {
            AtomicValue<Integer> v = new DistributedAtomicInteger(client, args[1], new ExponentialBackoffRetry(10, 10))
                    .add(Integer.parseInt(args[2]));
            if (!v.succeeded()) {
                throw new Exception("add did not succeed");
            }
            say("ADDED " + v.preValue() + " " + v.postValue());
        }
    }

    /** Answers "LEADER? <n>" for a latch or a selector. */
    static void answer(String n, Participant leader, boolean has, Collection<Participant> participants) {
        StringBuilder ids = new StringBuilder();
        for (Participant p : participants) {
            if (ids.length() > 0) {
                ids.append(',');
            }
            ids.append(p.getId());
        }
        String id = leader.getId();
        say("ANSWER " + n + " " + (id.isEmpty() ? "-" : id) + " " + has + " " + (ids.length() == 0 ? "-" : ids));
    }

    static void latch(String[] args) throws Exception {
        need(args, 3, "latch");
        try (CuratorFramework client = connect(args[0])) {
            LeaderLatch latch = new LeaderLatch(client, args[1], args[2], LeaderLatch.CloseMode.NOTIFY_LEADER);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    say("LEADER " + nowNanos());
                }

                @Override
                public void notLeader() {
                    say("NOTLEADER " + nowNanos());
                }
            });
            latch.start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(CONNECT_WAIT_SECONDS);
            while (latch.getOurPath() == null) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("no latch node after " + CONNECT_WAIT_SECONDS + "s");
                }
                Thread.sleep(5);
            }
            say("NODE " + latch.getOurPath());
            for (;;) {
                String line = readLine();
                if (line == null) {
                    latch.close(LeaderLatch.CloseMode.SILENT);
                    return;
                }
                String[] f = line.trim().split("\\s+");
                switch (f[0]) {
                    case "LEADER?":
                        answer(f[1], latch.getLeader(), latch.hasLeadership(), latch.getParticipants());
                        break;
                    case "close":
                        say("CLOSING " + nowNanos());
                        latch.close();
                        say("CLOSED");
                        return;
                    default:
                        throw new IllegalArgumentException("latch: unknown command " + line);
                }
            }
        }
    }

    static void selector(String[] args) throws Exception {
        need(args, 6, "selector");
        String connect = args[0];
        String path = args[1];
        String id = args[2];
        int iterations = Integer.parseInt(args[3]);
        String outFile = args[4];
        long holdMillis = Long.parseLong(args[5]);
        try (CuratorFramework client = connect(connect);
                BufferedWriter out = new BufferedWriter(new FileWriter(outFile, StandardCharsets.UTF_8, true))) {
            Object mu = new Object();
            int[] counted = {0}; // guarded by mu
            int[] recorded = {0}; // guarded by mu
            boolean[] inTerm = {false}; // guarded by mu
            CountDownLatch finished = new CountDownLatch(1);
            LeaderSelector sel = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework c) throws Exception {
                    long start = nowNanos();
                    boolean counts;
                    synchronized (mu) {
                        inTerm[0] = true;
                        counts = counted[0] < iterations;
                    }
                    try {
                        if (counts) {
                            if (holdMillis > 0) {
                                Thread.sleep(holdMillis);
                            }
                        } else {
                            Thread.sleep(Long.MAX_VALUE); // until close interrupts
                        }
                    } finally {
                        long end = nowNanos();
                        synchronized (mu) {
                            out.write(start + " " + end + "\n");
                            out.flush();
                            recorded[0]++;
                            if (counts && ++counted[0] == iterations) {
                                finished.countDown();
                            }
                            inTerm[0] = false;
                            mu.notifyAll();
                        }
                    }
                }
            });
            sel.setId(id);
            sel.autoRequeue();
            say("READY");
            awaitLine("GO");
            sel.start();
            finished.await();
            sel.close();
            synchronized (mu) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (inTerm[0]) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new IOException("takeLeadership still running 10s after close");
                    }
                    mu.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                }
                out.write("done " + recorded[0] + "\n");
                out.flush();
            }
            say("DONE");
        }
    }

    static void selholder(String[] args) throws Exception {
        need(args, 3, "selholder");
        try (CuratorFramework client = connect(args[0])) {
            LinkedBlockingQueue<Boolean> release = new LinkedBlockingQueue<>();
            LeaderSelector sel = new LeaderSelector(client, args[1], new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework c) throws Exception {
                    say("LEADING " + nowNanos());
                    release.take();
                    say("RELEASING " + nowNanos());
                }
            });
            sel.setId(args[2]);
            sel.start();
            say("STARTED");
            for (;;) {
                String line = readLine();
                if (line == null) {
                    sel.close();
                    return;
                }
                String[] f = line.trim().split("\\s+");
                switch (f[0]) {
                    case "LEADER?":
                        answer(f[1], sel.getLeader(), sel.hasLeadership(), sel.getParticipants());
                        break;
                    case "release":
                        release.put(true);
                        break;
                    case "close":
                        sel.close();
                        say("CLOSED");
                        return;
                    default:
                        throw new IllegalArgumentException("selholder: unknown command " + line);
                }
            }
        }
    }

    /** Hex of b, or "-" when b is null or empty. */
    static String hexOrDash(byte[] b) {
        if (b == null || b.length == 0) {
            return "-";
        }
        StringBuilder s = new StringBuilder(2 * b.length);
        for (byte x : b) {
            s.append(String.format("%02x", x & 0xff));
        }
        return s.toString();
    }

    /**
     * cache: a CuratorCache on path; prints every event and INITIALIZED,
     * answers DUMP with the cache's contents (see the head of the file).
     */
    static void cache(String[] args) throws Exception {
        need(args, 2, "cache");
        try (CuratorFramework client = connect(args[0]);
                CuratorCache cache = CuratorCache.build(client, args[1])) {
            CuratorCacheListener l = CuratorCacheListener.builder()
                    .forAll((type, oldData, data) -> {
                        ChildData d = data != null ? data : oldData;
                        say("EVENT " + type + " " + d.getPath() + " " + d.getStat().getVersion());
                    })
                    .forInitialized(() -> say("INITIALIZED"))
                    .build();
            cache.listenable().addListener(l);
            cache.start();
            for (;;) {
                String line = readLine();
                if (line == null) {
                    return;
                }
                String[] f = line.trim().split("\\s+");
                if (f[0].equals("close")) {
                    break;
                }
                if (f[0].equals("DUMP") && f.length == 2) {
                    StringBuilder b = new StringBuilder("BEGIN " + f[1] + "\n");
                    cache.stream()
                            .sorted((x, y) -> x.getPath().compareTo(y.getPath()))
                            .forEach(d -> b.append("NODE ").append(d.getPath()).append(' ')
                                    .append(d.getStat().getVersion()).append(' ')
                                    .append(d.getStat().getMzxid()).append(' ')
                                    .append(hexOrDash(d.getData())).append('\n'));
                    b.append("END ").append(f[1]);
                    say(b.toString());
                    continue;
                }
                throw new IllegalArgumentException("cache: unknown command " + line);
            }
        }
        say("CLOSED");
    }

    /** write: runs create/set/delete commands from stdin, one at a time. */
    static void write(String[] args) throws Exception {
        need(args, 1, "write");
        try (CuratorFramework client = connect(args[0])) {
            say("READY");
            int n = 0;
            for (;;) {
                String line = readLine();
                if (line == null) {
                    return;
                }
                String[] f = line.trim().split("\\s+");
                if (f[0].equals("close")) {
                    return;
                }
                if (f[0].equals("SYNC") && f.length == 2) {
                    say("SYNCED " + f[1]);
                    continue;
                }
                n++;
                byte[] data = f.length > 2 && !f[2].equals("-") ? f[2].getBytes(StandardCharsets.UTF_8) : new byte[0];
                try {
                    switch (f[0]) {
                        case "create":
                            client.create().forPath(f[1], data);
                            break;
                        case "set":
                            client.setData().forPath(f[1], data);
                            break;
                        case "delete":
                            client.delete().forPath(f[1]);
                            break;
                        default:
                            throw new IllegalArgumentException("write: unknown command " + line);
                    }
                    say("OK " + n);
                } catch (KeeperException e) {
                    say("FAIL " + n + " " + e.code());
                }
            }
        }
    }

    static void groupmember(String[] args) throws Exception {
        need(args, 4, "groupmember");
        try (CuratorFramework client = connect(args[0])) {
            GroupMember g = new GroupMember(client, args[1], args[2], args[3].getBytes(StandardCharsets.UTF_8));
            g.start();
            say("STARTED");
            for (;;) {
                String line = readLine();
                if (line == null || line.trim().equals("close")) {
                    g.close();
                    if (line != null) {
                        say("CLOSED");
                    }
                    return;
                }
                String[] f = line.trim().split(" ");
                if (f[0].equals("MEMBERS?")) {
                    StringBuilder b = new StringBuilder();
                    for (Map.Entry<String, byte[]> e : new TreeMap<>(g.getCurrentMembers()).entrySet()) {
                        if (b.length() > 0) {
                            b.append(',');
                        }
                        b.append(e.getKey()).append('=').append(new String(e.getValue(), StandardCharsets.UTF_8));
                    }
                    say("MEMBERS " + f[1] + " " + b);
                }
            }
        }
    }

    static void persistentnode(String[] args) throws Exception {
        need(args, 4, "persistentnode");
        try (CuratorFramework client = connect(args[0])) {
            PersistentNode n = new PersistentNode(client, CreateMode.valueOf(args[2]), false, args[1],
                    args[3].getBytes(StandardCharsets.UTF_8));
            n.start();
            if (!n.waitForInitialCreate(10, TimeUnit.SECONDS)) {
                throw new IOException("no initial create in 10 s");
            }
            say("NODE " + n.getActualPath());
            String line = readLine();
            n.close();
            if (line != null) {
                say("CLOSED");
            }
        }
    }

    static void ttlnode(String[] args) throws Exception {
        need(args, 4, "ttlnode");
        try (CuratorFramework client = connect(args[0])) {
            PersistentTtlNode n = new PersistentTtlNode(client, args[1], Long.parseLong(args[2]),
                    args[3].getBytes(StandardCharsets.UTF_8));
            n.start();
            if (!n.waitForInitialCreate(10, TimeUnit.SECONDS)) {
                throw new IOException("no initial create in 10 s");
            }
            say("STARTED");
            String line = readLine();
            n.close();
            if (line != null) {
                say("CLOSED");
            }
        }
    }

    interface Step {
        void run() throws Exception;
    }

    /** Runs step on a daemon thread (a waiter that never gets through). */
    static void background(Step step) {
        Thread t = new Thread(() -> {
            try {
                step.run();
            } catch (InterruptedException e) {
                // the process ends
            } catch (Exception e) {
                System.err.println("ERROR: " + e);
                e.printStackTrace();
                System.exit(1);
            }
        });
        t.setDaemon(true);
        t.start();
    }

    /** Waits (30 s at most) until path has n children. */
    static void awaitChildren(CuratorFramework client, String path, int n) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (;;) {
            try {
                if (client.getChildren().forPath(path).size() == n) {
                    return;
                }
            } catch (KeeperException.NoNodeException e) {
                // not yet
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(path + " has not " + n + " children after 30s");
            }
            Thread.sleep(10);
        }
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static void layout(String[] args) throws Exception {
        need(args, 2, "layout");
        String root = args[1];
        CuratorFramework client = connect(args[0]);
        layoutLocks(client, root);
        layoutValues(client, root);
        layoutQueues(client, root);
        PersistentNode pn = new PersistentNode(client, CreateMode.PERSISTENT, false, root + "/persistent-node", utf8("pnode"));
        pn.start();
        if (!pn.waitForInitialCreate(10, TimeUnit.SECONDS)) {
            throw new IOException("no initial create in 10 s");
        }
        new GroupMember(client, root + "/group", "curator-member", utf8("curator-member:8080")).start();
        awaitChildren(client, root + "/group", 1);
        say("LAYOUT");
        readLine(); // hold until stdin ends
    }

    /** The lock family, the latch and the selector, each with a waiter. */
    static void layoutLocks(CuratorFramework client, String root) throws Exception {
        new InterProcessMutex(client, root + "/mutex").acquire();
        background(() -> new InterProcessMutex(client, root + "/mutex").acquire());
        new InterProcessReadWriteLock(client, root + "/rwlock").readLock().acquire();
        background(() -> new InterProcessReadWriteLock(client, root + "/rwlock").writeLock().acquire());
        new InterProcessSemaphoreV2(client, root + "/semaphore", 1).acquire();
        background(() -> new InterProcessSemaphoreV2(client, root + "/semaphore", 1).acquire());
        LeaderLatch l1 = new LeaderLatch(client, root + "/latch", "curator-latch-1");
        l1.start();
        l1.await();
        new LeaderLatch(client, root + "/latch", "curator-latch-2").start();
        CountDownLatch leading = new CountDownLatch(1);
        for (String id : new String[] {"curator-selector-1", "curator-selector-2"}) {
            LeaderSelector sel = new LeaderSelector(client, root + "/selector", new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework c) throws Exception {
                    leading.countDown();
                    new CountDownLatch(1).await();
                }
            });
            sel.setId(id);
            sel.start();
            leading.await(); // the first leads before the second queues
        }
        awaitChildren(client, root + "/mutex", 2);
        awaitChildren(client, root + "/rwlock", 2);
        awaitChildren(client, root + "/semaphore/leases", 2);
        awaitChildren(client, root + "/latch", 2);
        awaitChildren(client, root + "/selector", 2);
    }

    /** Shared count, atomic long, barriers. */
    static void layoutValues(CuratorFramework client, String root) throws Exception {
        new SharedCount(client, root + "/count", 7).start();
        DistributedAtomicLong al = new DistributedAtomicLong(client, root + "/atomic-long", new RetryNTimes(0, 0),
                PromotedToLock.builder().lockPath(root + "/atomic-long-lock").retryPolicy(new RetryNTimes(3, 10)).build());
        if (!al.increment().succeeded()) {
            throw new IllegalStateException("atomic long: increment did not succeed");
        }
        new InterProcessMutex(client, root + "/atomic-long-lock").acquire();
        new org.apache.curator.framework.recipes.barriers.DistributedBarrier(client, root + "/barrier").setBarrier();
        background(() -> new DistributedDoubleBarrier(client, root + "/double-barrier", 2).enter());
        awaitChildren(client, root + "/double-barrier", 1);
    }

    /** A queue, a lock-safety queue with an item held, a simple queue. */
    static void layoutQueues(CuratorFramework client, String root) throws Exception {
        DistributedQueue<String> q = queueBuilder(client, null, root + "/queue", "-").buildQueue();
        q.start();
        DistributedQueue<String> prod = queueBuilder(client, null, root + "/queue-ls", "-").buildQueue();
        prod.start();
        for (String item : new String[] {"a", "b"}) {
            q.put(item);
            prod.put(item);
        }
        QueueConsumer<String> hold = new QueueConsumer<String>() {
            @Override
            public void consumeMessage(String item) throws Exception {
                new CountDownLatch(1).await();
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        queueBuilder(client, hold, root + "/queue-ls", root + "/queue-ls-lock").buildQueue().start();
        awaitChildren(client, root + "/queue-ls-lock", 1);
        SimpleDistributedQueue sq = new SimpleDistributedQueue(client, root + "/simple-queue");
        sq.offer(utf8("a"));
        sq.offer(utf8("b"));
    }
}
