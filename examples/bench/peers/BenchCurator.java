// BenchCurator runs the peers workloads of zkrecipes' benchmark
// (examples/bench, -which peers) with Apache Curator 5.4. It is a
// single-file source program, embedded in the benchmark and run as
//
//	java -cp <curator + zookeeper jars> BenchCurator.java <connectString> <sessionTimeoutMs> <sessions>
//
// It connects <sessions> CuratorFramework clients (one ZooKeeper session
// each), prints READY, then serves one command per stdin line and answers
// each with one line (diagnostics go to stderr):
//
//	cycle <path> <n>                            uncontended: n x acquire+release of one InterProcessMutex on client 0
//	contend <path> <sessions> <millis>          one thread per session loops acquire;release of the same lock path
//	queue <path> <waiters> <sessions>           a holder on client 0; <waiters> threads (one mutex each, on client i%sessions)
//	                                            queue behind it; once all their nodes exist it prints QUEUED and waits
//	                                            for a line GO (the benchmark waits for their watches meanwhile); the
//	                                            clock runs from the holder's release until all are done
//	rwlock <path> <sessions> <millis>           one thread per session loops readLock() acquire;release
//	semaphore <path> <sessions> <leases> <millis>  one thread per session loops InterProcessSemaphoreV2 acquire;returnLease
//	counter <path> <sessions> <millis> <lockPath|->  one thread per session loops DistributedAtomicLong increment()
//	                                            (ExponentialBackoffRetry(10, 10); with a lock path, two optimistic
//	                                            tries (RetryNTimes(1, 1)), then PromotedToLock there, timeout 5 s,
//	                                            BoundedExponentialBackoffRetry(1, 4, 29) under it); ops: increments
//	                                            that succeeded, begun before the deadline; total: calls
//	doublebarrier <path> <members> <cycles>     <cycles> times: <members> threads (client i each) enter one
//	                                            DistributedDoubleBarrier together, then leave together
//	qdrain <path> <take> <dq|simple> <consumers> <limitMs>  sessions 1..consumers consume a backlog already at
//	                 <path> until <take> items are consumed or <limitMs> passes; ops is the items consumed
//	workqueue <path> <items> <dq|simple> <consumers>  client 0 puts <items> into a DistributedQueue (dq) or
//	                                            SimpleDistributedQueue (simple) while clients 1..consumers consume;
//	                                            the clock runs from the first put to the last item consumed
//	cacheload <path>                            a new CuratorCache of <path> on client 0 (the previous one closed):
//	                                            start, wait for "initialized"; answers ops = the cache's size then,
//	                                            seconds = start to initialized, and three more numbers: the heap's
//	                                            growth in bytes (used heap after a full GC, before the start and
//	                                            after "initialized"), the cache's size at that second GC, and the
//	                                            read requests (getData, getChildren, exists) client 0 made meanwhile
//	cachelat-start                              forget the latency samples; the benchmark then sets nodes with data
//	                                            "t<epoch nanos of the set>..."; each NODE_CHANGED with such data is
//	                                            one sample (epoch nanos at the listener minus the set's)
//	cachelat-wait <m>                           wait (30 s at most) for m samples; answers ops = samples,
//	                                            seconds = the p50, total = the p99 in microseconds
//	cacheresync-start                           forget the resync samples: NODE_CHANGED events with data "r..."
//	cacheresync-wait <k> <epochNanos>           wait (60 s at most) for k of them; answers ops = those seen,
//	                                            seconds = from <epochNanos> (the link restored) to the k-th,
//	                                            total = microseconds from <epochNanos> to client 0's RECONNECTED;
//	                                            then waits until client 0 has made no read for a second (2 minutes
//	                                            at most) and adds two numbers: microseconds from <epochNanos> to its
//	                                            last read's reply, its reads since cacheresync-start, and
//	                                            microseconds from <epochNanos> to the first of them
//	discregister <base> <n>                     a ServiceDiscovery on client 0 (base path <base>) registers <n> DYNAMIC
//	                                            instances of service "svc" one after another; seconds: the <n>
//	                                            registrations; the discovery stays open until discclose
//	discclose                                   closes discregister's discovery (unregistering its instances)
//	discsee-start <base> <readers> [<bg>]       a registering discovery on client 0, which registers <bg> (default 0)
//	                                            instances of "svc"; then a ServiceDiscovery and a started
//	                                            ServiceCache of "svc" on each of clients 0..readers-1, waited for
//	                                            until each holds the <bg> instances
//	discsee <k>                                 <k> times: register a new instance, wait until every cache holds it,
//	                                            unregister it, wait until every cache has dropped it; adds
//	                                            "<p50Ms> <maxMs>" of the registration-to-all-caches times
//	discsee-stop                                closes discsee-start's caches and discoveries
//	discgetinstance <base> <n> <millis>         a ServiceDiscovery on client 0 registers <n> instances of "svc";
//	                                            a started ServiceProvider of "svc" (round robin) holding all of
//	                                            them; getInstance() in a loop on one thread for <millis> (warm-up)
//	                                            and again for <millis> (timed); ops: calls timed; adds "<ns> <bytes>
//	                                            <startMs>": per call (bytes: this thread's allocation), and the
//	                                            provider's start until it held <n>; then all closed
//	group <path> <members> <sessions>           <members> GroupMembers (id m<i>, on client i%sessions) started at
//	                                            once; adds "<ms>": from the start to every member's
//	                                            getCurrentMembers() holding all <members> (polled each ms); then
//	                                            all closed
//	groupexp-start <path> <members> <sessions> <connect>  <members>-1 GroupMembers (id m<i>, on client i%sessions)
//	                                            and one more (the last id) on a client of its own connected to
//	                                            <connect> (the benchmark's proxy); waits until all agree, and
//	                                            watches the last member's node (client 0)
//	groupexp-wait                               (the benchmark has black-holed the proxy) waits for the last
//	                                            member's node to be deleted, then until every other member's
//	                                            getCurrentMembers() has dropped it (polled each ms); adds
//	                                            "<ms> <msBefore>": from the deletion heard to agreement, and from
//	                                            the command to the deletion heard
//	groupexp-stop                               closes groupexp-start's members and client
//	exit
//
// Answer: "DONE <ops> <seconds> <cpuSeconds> <total> <most>": ops counted
// (for the timed commands, acquisitions that began before the deadline),
// wall seconds the workload took (the timed commands: their duration; queue:
// release to last hand-off), this process's CPU time over that time (all
// threads: ZooKeeper's, Curator's, the JIT's and GC's), acquisitions in all,
// and the most holders seen at once. counter adds "<p50Ms> <p99Ms> <maxMs>
// <failed>" (each call's latency; calls whose succeeded() was false);
// doublebarrier adds "<inP50Ms> <outP50Ms> <inMaxMs> <outMaxMs>": from the
// moment all members start entering (leaving) to the last one's return,
// the median and the largest over the cycles. On a failure, or a broken invariant
// (two mutex holders, more semaphore holders than leases), it prints
// "ERROR <message>" and exits 1.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.details.ServiceCacheListener;

public class BenchCurator {
    static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    static final List<CuratorFramework> clients = new ArrayList<>();

    static final BufferedReader IN = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    /** One step of a session's loop: acquire, then release. */
    interface Hold {
        Runnable acquire() throws Exception; // returns the release
    }

    interface HoldFactory {
        Hold make(CuratorFramework c) throws Exception;
    }

    static final class Result {
        long ops, total, most;
        double seconds, cpu;

        double[] extra; // counter, doublebarrier

        String line() {
            StringBuilder b = new StringBuilder(String.format("DONE %d %.9f %.9f %d %d", ops, seconds, cpu, total, most));
            if (extra != null) {
                for (double x : extra) {
                    b.append(String.format(" %.3f", x));
                }
            }
            return b.toString();
        }
    }

    static double cpuSeconds() {
        return OS.getProcessCpuTime() / 1e9;
    }

    public static void main(String[] args) {
        int code = 0;
        try {
            if (args.length != 3) {
                throw new IllegalArgumentException("usage: BenchCurator <connectString> <sessionTimeoutMs> <sessions>");
            }
            int timeout = Integer.parseInt(args[1]);
            sessionTimeoutMs = timeout;
            int n = Integer.parseInt(args[2]);
            for (int i = 0; i < n; i++) {
                CuratorFramework c = CuratorFrameworkFactory.newClient(
                        args[0], timeout, Math.max(timeout, 3000), new ExponentialBackoffRetry(100, 10));
                c.start();
                if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("no connection to " + args[0] + " within 30s");
                }
                clients.add(c);
            }
            say("READY");
            for (String line; (line = IN.readLine()) != null; ) {
                String[] f = line.trim().split("\\s+");
                if (f[0].equals("exit")) {
                    break;
                }
                say(serve(f).line());
            }
        } catch (Throwable t) {
            say("ERROR " + t.toString().replace('\n', ' '));
            t.printStackTrace(System.err);
            code = 1;
        }
        for (CuratorFramework c : clients) {
            c.close();
        }
        System.exit(code);
    }

    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    static Result serve(String[] f) throws Exception {
        switch (f[0]) {
            case "cycle":
                return cycle(f[1], Integer.parseInt(f[2]));
            case "contend":
                return timed(Integer.parseInt(f[2]), Long.parseLong(f[3]), 1, c -> {
                    InterProcessMutex m = new InterProcessMutex(c, f[1]);
                    return () -> {
                        m.acquire();
                        return () -> release(m);
                    };
                });
            case "rwlock":
                return timed(Integer.parseInt(f[2]), Long.parseLong(f[3]), Integer.MAX_VALUE, c -> {
                    InterProcessMutex m = new InterProcessReadWriteLock(c, f[1]).readLock();
                    return () -> {
                        m.acquire();
                        return () -> release(m);
                    };
                });
            case "semaphore":
                return timed(Integer.parseInt(f[2]), Long.parseLong(f[4]), Integer.parseInt(f[3]), c -> {
                    InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, f[1], Integer.parseInt(f[3]));
                    return () -> {
                        Lease l = s.acquire();
                        return () -> s.returnLease(l);
                    };
                });
            case "queue":
                return queue(f[1], Integer.parseInt(f[2]), Integer.parseInt(f[3]));
            case "counter":
                return counter(f[1], Integer.parseInt(f[2]), Long.parseLong(f[3]), f[4]);
            case "doublebarrier":
                return doubleBarrier(f[1], Integer.parseInt(f[2]), Integer.parseInt(f[3]));
            case "workqueue":
                return workqueue(f[1], Integer.parseInt(f[2]), f[3], Integer.parseInt(f[4]));
            case "qdrain":
                return qdrain(f[1], Integer.parseInt(f[2]), f[3], Integer.parseInt(f[4]), Long.parseLong(f[5]));
            case "cacheload":
                return cacheLoad(f[1]);
            case "discregister":
                return discRegister(f[1], Integer.parseInt(f[2]));
            case "discclose":
                discRegSD.close();
                discRegSD = null;
                return new Result();
            case "discgetinstance":
                return discGetInstance(f[1], Integer.parseInt(f[2]), Long.parseLong(f[3]));
            case "discsee-start":
                return discSeeStart(f[1], Integer.parseInt(f[2]), f.length > 3 ? Integer.parseInt(f[3]) : 0);
            case "discsee":
                return discSee(Integer.parseInt(f[1]));
            case "discsee-stop":
                for (ServiceCache<Void> c : seeCaches) {
                    c.close();
                }
                for (ServiceDiscovery<Void> d : seeSDs) {
                    d.close();
                }
                seeCaches.clear();
                seeSDs.clear();
                return new Result();
            case "group":
                return group(f[1], Integer.parseInt(f[2]), Integer.parseInt(f[3]));
            case "groupexp-start":
                return groupExpStart(f[1], Integer.parseInt(f[2]), Integer.parseInt(f[3]), f[4]);
            case "groupexp-wait":
                return groupExpWait();
            case "groupexp-stop":
                for (GroupMember g : expMembers) {
                    g.close();
                }
                expMembers.clear();
                expClient.close();
                expClient = null;
                return new Result();
            case "cachelat-start":
                return cacheReset(latSamples);
            case "cachelat-wait":
                return cacheLatWait(Integer.parseInt(f[1]));
            case "cacheresync-start":
                return cacheReset(resyncSamples);
            case "cacheresync-wait":
                return cacheResyncWait(Integer.parseInt(f[1]), Long.parseLong(f[2]));
            default:
                throw new IllegalArgumentException("unknown command " + String.join(" ", f));
        }
    }

    static void release(InterProcessMutex m) {
        try {
            m.release();
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    static Result cycle(String path, int n) throws Exception {
        InterProcessMutex m = new InterProcessMutex(clients.get(0), path);
        Result r = new Result();
        double cpu0 = cpuSeconds();
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            m.acquire();
            m.release();
        }
        r.seconds = (System.nanoTime() - t0) / 1e9;
        r.cpu = cpuSeconds() - cpu0;
        r.ops = r.total = n;
        r.most = 1;
        return r;
    }

    /**
     * One thread per session loops hold.acquire(); release until millis
     * have passed, checking that at most max hold at once.
     */
    static Result timed(int sessions, long millis, int max, HoldFactory factory) throws Exception {
        List<Hold> holds = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            holds.add(factory.make(clients.get(i)));
        }
        AtomicInteger holders = new AtomicInteger();
        AtomicLong inWindow = new AtomicLong(), all = new AtomicLong(), most = new AtomicLong();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Result r = new Result();
        double cpu0 = cpuSeconds();
        long deadline = System.nanoTime() + millis * 1_000_000L;
        List<Thread> threads = new ArrayList<>();
        for (Hold h : holds) {
            Thread t = new Thread(() -> {
                try {
                    while (failed.get() == null && System.nanoTime() < deadline) {
                        Runnable release = h.acquire();
                        int now = holders.incrementAndGet();
                        most.accumulateAndGet(now, Math::max);
                        if (now > max) {
                            failed.compareAndSet(null, new IllegalStateException(now + " holders at once, at most " + max + " allowed"));
                        }
                        if (System.nanoTime() < deadline) {
                            inWindow.incrementAndGet();
                        }
                        all.incrementAndGet();
                        holders.decrementAndGet();
                        release.run();
                    }
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failed.get() != null) {
            throw new Exception(failed.get());
        }
        r.cpu = cpuSeconds() - cpu0;
        r.seconds = millis / 1e3;
        r.ops = inWindow.get();
        r.total = all.get();
        r.most = most.get();
        return r;
    }

    static final QueueSerializer<byte[]> RAW = new QueueSerializer<byte[]>() {
        @Override
        public byte[] serialize(byte[] item) {
            return item;
        }

        @Override
        public byte[] deserialize(byte[] bytes) {
            return bytes;
        }
    };

    /**
     * workqueue: session 0 puts items into a DistributedQueue (kind dq) or
     * SimpleDistributedQueue (kind simple) at path while sessions 1..consumers
     * consume them (a DistributedQueue consumer each; a thread polling each
     * for simple); the time is from the first put to the last item consumed.
     */
    static Result workqueue(String path, int items, String kind, int consumers) throws Exception {
        CountDownLatch all = new CountDownLatch(items);
        List<DistributedQueue<byte[]>> queues = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        DistributedQueue<byte[]> producer = null;
        SimpleDistributedQueue simple = null;
        if (kind.equals("dq")) {
            for (int i = 1; i <= consumers; i++) {
                QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
                    @Override
                    public void consumeMessage(byte[] item) {
                        all.countDown();
                    }

                    @Override
                    public void stateChanged(CuratorFramework c, ConnectionState s) {}
                };
                DistributedQueue<byte[]> q = QueueBuilder.builder(clients.get(i), consumer, RAW, path).buildQueue();
                q.start();
                queues.add(q);
            }
            producer = QueueBuilder.builder(clients.get(0), null, RAW, path).putInBackground(false).buildQueue();
            producer.start();
        } else {
            simple = new SimpleDistributedQueue(clients.get(0), path);
            for (int i = 1; i <= consumers; i++) {
                SimpleDistributedQueue q = new SimpleDistributedQueue(clients.get(i), path);
                Thread t = new Thread(() -> {
                    try {
                        while (all.getCount() > 0) {
                            if (q.poll(50, TimeUnit.MILLISECONDS) != null) {
                                all.countDown();
                            }
                        }
                    } catch (Throwable e) {
                        failed.compareAndSet(null, e);
                    }
                });
                t.start();
                threads.add(t);
            }
        }
        byte[] item = "job".getBytes(StandardCharsets.UTF_8);
        double cpu0 = cpuSeconds();
        long t0 = System.nanoTime();
        for (int j = 0; j < items; j++) {
            if (producer != null) {
                producer.put(item);
            } else {
                simple.offer(item);
            }
        }
        boolean done = all.await(2, TimeUnit.MINUTES);
        Result r = new Result();
        r.seconds = (System.nanoTime() - t0) / 1e9;
        r.cpu = cpuSeconds() - cpu0;
        for (DistributedQueue<byte[]> q : queues) {
            q.close();
        }
        if (producer != null) {
            producer.close();
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failed.get() != null) {
            throw new Exception(failed.get());
        }
        if (!done) {
            throw new IllegalStateException("workqueue: " + all.getCount() + " items not consumed within two minutes");
        }
        r.ops = r.total = items;
        r.most = 1;
        return r;
    }

    /**
     * qdrain: sessions 1..consumers start consuming a queue at path that
     * already holds a backlog (put there by the Go side, in Curator's
     * layout) until take items are consumed or limitMs passes; ops is the
     * items consumed, the time from the consumers' start to the last one.
     */
    static Result qdrain(String path, int take, String kind, int consumers, long limitMs) throws Exception {
        CountDownLatch all = new CountDownLatch(take);
        AtomicLong lastNanos = new AtomicLong();
        AtomicInteger consumed = new AtomicInteger();
        List<DistributedQueue<byte[]>> queues = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        double cpu0 = cpuSeconds();
        long t0 = System.nanoTime();
        if (kind.equals("dq")) {
            for (int i = 1; i <= consumers; i++) {
                QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
                    @Override
                    public void consumeMessage(byte[] item) {
                        if (consumed.incrementAndGet() <= take) {
                            lastNanos.set(System.nanoTime());
                        }
                        all.countDown();
                    }

                    @Override
                    public void stateChanged(CuratorFramework c, ConnectionState s) {}
                };
                DistributedQueue<byte[]> q = QueueBuilder.builder(clients.get(i), consumer, RAW, path).buildQueue();
                q.start();
                queues.add(q);
            }
        } else {
            for (int i = 1; i <= consumers; i++) {
                SimpleDistributedQueue q = new SimpleDistributedQueue(clients.get(i), path);
                Thread t = new Thread(() -> {
                    try {
                        while (all.getCount() > 0) {
                            if (q.poll(50, TimeUnit.MILLISECONDS) != null) {
                                if (consumed.incrementAndGet() <= take) {
                                    lastNanos.set(System.nanoTime());
                                }
                                all.countDown();
                            }
                        }
                    } catch (Throwable e) {
                        failed.compareAndSet(null, e);
                        while (all.getCount() > 0) {
                            all.countDown();
                        }
                    }
                });
                t.setDaemon(true);
                t.start();
                threads.add(t);
            }
        }
        all.await(limitMs, TimeUnit.MILLISECONDS);
        long got = Math.min(consumed.get(), take);
        Result r = new Result();
        long end = got == take ? lastNanos.get() : System.nanoTime();
        r.seconds = (end - t0) / 1e9;
        r.cpu = cpuSeconds() - cpu0;
        for (DistributedQueue<byte[]> q : queues) {
            q.close();
        }
        while (all.getCount() > 0) {
            all.countDown();
        }
        for (Thread t : threads) {
            t.join(5000);
        }
        if (failed.get() != null) {
            throw new Exception("qdrain: " + got + " items, then " + failed.get(), failed.get());
        }
        r.ops = r.total = (int) Math.min(got, take);
        r.most = 1;
        return r;
    }

    static Result queue(String path, int waiters, int sessions) throws Exception {
        InterProcessMutex holder = new InterProcessMutex(clients.get(0), path);
        holder.acquire();
        AtomicInteger holders = new AtomicInteger();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            InterProcessMutex m = new InterProcessMutex(clients.get(i % sessions), path);
            Thread t = new Thread(() -> {
                try {
                    m.acquire();
                    if (holders.incrementAndGet() != 1) {
                        failed.compareAndSet(null, new IllegalStateException("two holders at once"));
                    }
                    holders.decrementAndGet();
                    m.release();
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
            });
            t.start();
            threads.add(t);
        }
        long limit = System.nanoTime() + TimeUnit.MINUTES.toNanos(2) + TimeUnit.MILLISECONDS.toNanos(20L * waiters);
        while (clients.get(0).getChildren().forPath(path).size() < waiters + 1) {
            if (System.nanoTime() > limit || failed.get() != null) {
                throw new IllegalStateException("waiters did not queue in time", failed.get());
            }
            Thread.sleep(20);
        }
        say("QUEUED");
        String go = IN.readLine();
        if (go == null || !go.trim().equals("GO")) {
            throw new IllegalStateException("queue: want GO, got " + go);
        }
        double cpu0 = cpuSeconds();
        long t0 = System.nanoTime();
        holder.release();
        for (Thread t : threads) {
            t.join();
        }
        Result r = new Result();
        r.seconds = (System.nanoTime() - t0) / 1e9;
        r.cpu = cpuSeconds() - cpu0;
        if (failed.get() != null) {
            throw new Exception(failed.get());
        }
        r.ops = r.total = waiters;
        r.most = 1;
        return r;
    }

    static double pct(long[] xs, double q) {
        if (xs.length == 0) {
            return 0;
        }
        long[] s = xs.clone();
        java.util.Arrays.sort(s);
        int i = (int) Math.ceil(q * s.length) - 1;
        return s[Math.max(0, Math.min(s.length - 1, i))] / 1e6;
    }

    static Result counter(String path, int sessions, long millis, String lockPath) throws Exception {
        List<DistributedAtomicLong> counters = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            counters.add(lockPath.equals("-")
                    ? new DistributedAtomicLong(clients.get(i), path, new ExponentialBackoffRetry(10, 10))
                    : new DistributedAtomicLong(clients.get(i), path, new RetryNTimes(1, 1),
                            PromotedToLock.builder().lockPath(lockPath).timeout(5, TimeUnit.SECONDS)
                                    .retryPolicy(new BoundedExponentialBackoffRetry(1, 4, 29)).build()));
        }
        AtomicLong inWindow = new AtomicLong(), all = new AtomicLong(), failedCalls = new AtomicLong();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        List<long[]> lats = new ArrayList<>();
        double cpu0 = cpuSeconds();
        long deadline = System.nanoTime() + millis * 1_000_000L;
        List<Thread> threads = new ArrayList<>();
        for (DistributedAtomicLong c : counters) {
            long[] mine = new long[1 << 20];
            int[] n = new int[1];
            Thread t = new Thread(() -> {
                try {
                    while (failed.get() == null && System.nanoTime() < deadline) {
                        long t0 = System.nanoTime();
                        AtomicValue<Long> v = c.increment();
                        long d = System.nanoTime() - t0;
                        if (n[0] < mine.length) {
                            mine[n[0]++] = d;
                        }
                        all.incrementAndGet();
                        if (!v.succeeded()) {
                            failedCalls.incrementAndGet();
                        } else if (t0 < deadline) {
                            inWindow.incrementAndGet();
                        }
                    }
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
                synchronized (lats) {
                    lats.add(java.util.Arrays.copyOf(mine, n[0]));
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failed.get() != null) {
            throw new Exception(failed.get());
        }
        int total = 0;
        for (long[] l : lats) {
            total += l.length;
        }
        long[] every = new long[total];
        int k = 0;
        for (long[] l : lats) {
            System.arraycopy(l, 0, every, k, l.length);
            k += l.length;
        }
        Result r = new Result();
        r.cpu = cpuSeconds() - cpu0;
        r.seconds = millis / 1e3;
        r.ops = inWindow.get();
        r.total = all.get();
        r.extra = new double[] {pct(every, 0.5), pct(every, 0.99), pct(every, 1.0), failedCalls.get()};
        return r;
    }

    static Result doubleBarrier(String path, int members, int cycles) throws Exception {
        long[] in = new long[cycles], out = new long[cycles];
        double cpu0 = cpuSeconds();
        long began = System.nanoTime();
        for (int cy = 0; cy < cycles; cy++) {
            java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(members);
            AtomicLong enterStart = new AtomicLong(), leaveStart = new AtomicLong();
            AtomicLong lastIn = new AtomicLong(), lastOut = new AtomicLong();
            AtomicReference<Throwable> failed = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < members; i++) {
                DistributedDoubleBarrier b = new DistributedDoubleBarrier(clients.get(i), path, members);
                Thread t = new Thread(() -> {
                    try {
                        start.await();
                        enterStart.compareAndSet(0, System.nanoTime());
                        if (!b.enter(60, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("enter timed out");
                        }
                        lastIn.accumulateAndGet(System.nanoTime(), Math::max);
                        start.await();
                        leaveStart.compareAndSet(0, System.nanoTime());
                        if (!b.leave(60, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("leave timed out");
                        }
                        lastOut.accumulateAndGet(System.nanoTime(), Math::max);
                    } catch (Throwable e) {
                        failed.compareAndSet(null, e);
                        start.reset();
                    }
                });
                t.start();
                threads.add(t);
            }
            for (Thread t : threads) {
                t.join();
            }
            if (failed.get() != null) {
                throw new Exception(failed.get());
            }
            in[cy] = lastIn.get() - enterStart.get();
            out[cy] = lastOut.get() - leaveStart.get();
        }
        Result r = new Result();
        r.seconds = (System.nanoTime() - began) / 1e9;
        r.cpu = cpuSeconds() - cpu0;
        r.ops = r.total = cycles;
        r.most = members;
        r.extra = new double[] {pct(in, 0.5), pct(out, 0.5), pct(in, 1.0), pct(out, 1.0)};
        return r;
    }

    // ------------------------------------------------------------ cache

    static CuratorCache cache;
    static final List<Long> latSamples = new ArrayList<>();   // nanoseconds, guarded by itself
    static final List<Long> resyncSamples = new ArrayList<>(); // epoch nanos of each "r" change, guarded by itself

    static long epochNanos() {
        java.time.Instant i = java.time.Instant.now();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    // Client 0's read requests, counted through Curator's tracer (every
    // operation commits a trace named after its builder).
    static final AtomicLong reads = new AtomicLong();
    static final AtomicLong lastRead = new AtomicLong(); // epoch nanos of the last read's reply
    static final AtomicLong firstRead = new AtomicLong(); // epoch nanos of the first read's reply since cacheresync-start
    static final java.util.concurrent.atomic.AtomicBoolean tracing = new java.util.concurrent.atomic.AtomicBoolean();

    static void traceReads() {
        if (!tracing.compareAndSet(false, true)) {
            return;
        }
        clients.get(0).getZookeeperClient().setTracerDriver(new org.apache.curator.drivers.TracerDriver() {
            @Override
            public void addTrace(String name, long time, TimeUnit unit) {
                if (name.startsWith("GetData") || name.startsWith("GetChildren") || name.startsWith("Exists")) {
                    reads.incrementAndGet();
                    long now = epochNanos();
                    lastRead.set(now);
                    firstRead.compareAndSet(0, now);
                }
            }

            @Override
            public void addCount(String name, int increment) {
            }
        });
    }

    static long heapUsed() throws InterruptedException {
        Thread.sleep(300); // a closed cache's last callbacks let go of it
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    static void sample(byte[] d) {
        long now = epochNanos();
        if (d == null || d.length == 0) {
            return;
        }
        if (d[0] == 't') {
            int end = 1;
            while (end < d.length && d[end] >= '0' && d[end] <= '9') {
                end++;
            }
            long sent = Long.parseLong(new String(d, 1, end - 1, StandardCharsets.US_ASCII));
            synchronized (latSamples) {
                latSamples.add(now - sent);
                latSamples.notifyAll();
            }
        } else if (d[0] == 'r') {
            synchronized (resyncSamples) {
                resyncSamples.add(now);
                resyncSamples.notifyAll();
            }
        }
    }

    static Result cacheLoad(String path) throws Exception {
        traceReads();
        if (cache != null) {
            cache.close();
            cache = null;
        }
        long heap0 = heapUsed();
        long reads0 = reads.get();
        java.util.concurrent.CountDownLatch init = new java.util.concurrent.CountDownLatch(1);
        CuratorCache c = CuratorCache.build(clients.get(0), path);
        c.listenable().addListener(CuratorCacheListener.builder()
                .forChanges((oldNode, node) -> sample(node.getData()))
                // A node the load missed (CURATOR-690) comes as a creation
                // when it changes.
                .forCreates(node -> sample(node.getData()))
                .forInitialized(init::countDown)
                .build());
        Result r = new Result();
        double cpu0 = cpuSeconds();
        long t0 = System.nanoTime();
        c.start();
        if (!init.await(5, TimeUnit.MINUTES)) {
            throw new IllegalStateException("CuratorCache of " + path + " not initialized after 5 minutes");
        }
        r.seconds = (System.nanoTime() - t0) / 1e9;
        r.cpu = cpuSeconds() - cpu0;
        r.ops = r.total = c.size();
        long readsLoad = reads.get() - reads0;
        long heap1 = heapUsed();
        r.extra = new double[] {heap1 - heap0, c.size(), readsLoad};
        cache = c;
        return r;
    }

    static long resyncReads0;

    static Result cacheReset(List<Long> samples) {
        synchronized (samples) {
            samples.clear();
        }
        resyncReads0 = reads.get();
        firstRead.set(0);
        reconnected.set(0);
        if (stateListening.compareAndSet(false, true)) {
            clients.get(0).getConnectionStateListenable().addListener((c, st) -> {
                if (st == org.apache.curator.framework.state.ConnectionState.RECONNECTED) {
                    reconnected.compareAndSet(0, epochNanos());
                }
            });
        }
        return new Result();
    }

    static final AtomicLong reconnected = new AtomicLong();
    static final java.util.concurrent.atomic.AtomicBoolean stateListening = new java.util.concurrent.atomic.AtomicBoolean();

    /** Waits until samples has n entries or the deadline passes; returns a copy. */
    static List<Long> awaitSamples(List<Long> samples, int n, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        synchronized (samples) {
            while (samples.size() < n) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                samples.wait(Math.max(1, left / 1_000_000));
            }
            return new ArrayList<>(samples);
        }
    }

    static Result cacheLatWait(int m) throws Exception {
        List<Long> s = awaitSamples(latSamples, m, 30);
        java.util.Collections.sort(s);
        Result r = new Result();
        r.ops = s.size();
        if (!s.isEmpty()) {
            r.seconds = s.get(s.size() / 2) / 1e9;
            r.total = s.get(Math.min(s.size() - 1, (int) Math.ceil(s.size() * 0.99) - 1)) / 1000;
        }
        return r;
    }

    static Result cacheResyncWait(int k, long restored) throws Exception {
        List<Long> s = awaitSamples(resyncSamples, k, 60);
        Result r = new Result();
        r.ops = s.size();
        if (!s.isEmpty()) {
            r.seconds = (java.util.Collections.max(s) - restored) / 1e9;
        }
        long rc = reconnected.get();
        r.total = rc == 0 ? -1 : (rc - restored) / 1000;
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (System.nanoTime() < deadline && epochNanos() - Math.max(lastRead.get(), restored) < 1_000_000_000L) {
            Thread.sleep(50);
        }
        long f = firstRead.get();
        r.extra = new double[] {(lastRead.get() - restored) / 1000, reads.get() - resyncReads0, f == 0 ? -1 : (f - restored) / 1000};
        return r;
    }

    // ------------------------------------------------------------ discovery

    static ServiceDiscovery<Void> discRegSD;
    static final List<ServiceDiscovery<Void>> seeSDs = new ArrayList<>();
    static final List<ServiceCache<Void>> seeCaches = new ArrayList<>();
    static long seeSeq;

    static ServiceDiscovery<Void> discovery(CuratorFramework c, String base) throws Exception {
        ServiceDiscovery<Void> sd = ServiceDiscoveryBuilder.builder(Void.class).client(c).basePath(base).build();
        sd.start();
        return sd;
    }

    static ServiceInstance<Void> instance(String id) throws Exception {
        return ServiceInstance.<Void>builder().name("svc").id(id).address("127.0.0.1").port(8080).build();
    }

    static Result discGetInstance(String base, int n, long millis) throws Exception {
        ServiceDiscovery<Void> sd = discovery(clients.get(0), base);
        try {
            for (int i = 0; i < n; i++) {
                sd.registerService(instance("i" + i));
            }
            org.apache.curator.x.discovery.ServiceProvider<Void> p = sd.serviceProviderBuilder().serviceName("svc").build();
            long s0 = System.nanoTime();
            p.start();
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
                while (p.getAllInstances().size() != n) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("the provider never held " + n + " instances");
                    }
                    Thread.sleep(1);
                }
                double startMs = (System.nanoTime() - s0) / 1e6;
                com.sun.management.ThreadMXBean tm = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
                Result r = new Result();
                for (int pass = 0; pass < 2; pass++) {
                    long calls = 0;
                    long b0 = tm.getCurrentThreadAllocatedBytes();
                    double c0 = cpuSeconds();
                    long t0 = System.nanoTime();
                    long end = t0 + TimeUnit.MILLISECONDS.toNanos(millis);
                    while (System.nanoTime() < end) {
                        for (int k = 0; k < 1000; k++) {
                            if (p.getInstance() == null) {
                                throw new IllegalStateException("getInstance gave none");
                            }
                        }
                        calls += 1000;
                    }
                    long took = System.nanoTime() - t0;
                    r.seconds = took / 1e9;
                    r.cpu = cpuSeconds() - c0;
                    r.ops = r.total = calls;
                    r.extra = new double[] {(double) took / calls, (double) (tm.getCurrentThreadAllocatedBytes() - b0) / calls, startMs};
                }
                return r;
            } finally {
                p.close();
            }
        } finally {
            sd.close();
        }
    }

    static Result discRegister(String base, int n) throws Exception {
        discRegSD = discovery(clients.get(0), base);
        Result r = new Result();
        double c0 = cpuSeconds();
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            discRegSD.registerService(instance("i" + i));
        }
        r.seconds = (System.nanoTime() - t0) / 1e9;
        r.cpu = cpuSeconds() - c0;
        r.ops = n;
        r.total = n;
        return r;
    }

    static Result discSeeStart(String base, int readers, int bg) throws Exception {
        ServiceDiscovery<Void> reg = discovery(clients.get(0), base); // the registering one
        for (int i = 0; i < bg; i++) {
            reg.registerService(instance("b" + i));
        }
        for (int i = 0; i < readers; i++) {
            ServiceDiscovery<Void> sd = discovery(clients.get(i % clients.size()), base);
            seeSDs.add(sd);
            ServiceCache<Void> c = sd.serviceCacheBuilder().name("svc").build();
            c.start();
            seeCaches.add(c);
        }
        seeSDs.add(reg); // last
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        for (ServiceCache<Void> c : seeCaches) {
            while (c.getInstances().size() < bg) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("a cache never held the " + bg + " instances");
                }
                Thread.sleep(1);
            }
        }
        return new Result();
    }

    static boolean allHold(String id, boolean want) {
        for (ServiceCache<Void> c : seeCaches) {
            boolean has = false;
            for (ServiceInstance<Void> i : c.getInstances()) {
                has |= i.getId().equals(id);
            }
            if (has != want) {
                return false;
            }
        }
        return true;
    }

    static void awaitAll(String id, boolean want, Object signal) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        synchronized (signal) {
            while (!allHold(id, want)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException("caches never agreed on " + id);
                }
                signal.wait(Math.max(1, left / 1_000_000));
            }
        }
    }

    static Result discSee(int k) throws Exception {
        Object signal = new Object();
        List<Runnable> removers = new ArrayList<>();
        ServiceCacheListener l = new ServiceCacheListener() {
            public void cacheChanged() {
                synchronized (signal) {
                    signal.notifyAll();
                }
            }

            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        for (ServiceCache<Void> c : seeCaches) {
            c.addListener(l);
            removers.add(() -> c.removeListener(l));
        }
        ServiceDiscovery<Void> reg = seeSDs.get(seeSDs.size() - 1);
        List<Double> ms = new ArrayList<>();
        Result r = new Result();
        double c0 = cpuSeconds();
        long t00 = System.nanoTime();
        try {
            for (int i = 0; i < k; i++) {
                ServiceInstance<Void> inst = instance("n" + (seeSeq++));
                long t0 = System.nanoTime();
                reg.registerService(inst);
                awaitAll(inst.getId(), true, signal);
                ms.add((System.nanoTime() - t0) / 1e6);
                reg.unregisterService(inst);
                awaitAll(inst.getId(), false, signal);
            }
        } finally {
            for (Runnable x : removers) {
                x.run();
            }
        }
        r.seconds = (System.nanoTime() - t00) / 1e9;
        r.cpu = cpuSeconds() - c0;
        r.ops = k;
        r.total = k;
        ms.sort(null);
        r.extra = new double[] {ms.get(ms.size() / 2), ms.get(ms.size() - 1)};
        return r;
    }

    static Result group(String path, int members, int sessions) throws Exception {
        List<GroupMember> gs = new ArrayList<>();
        Result r = new Result();
        double c0 = cpuSeconds();
        long t0 = System.nanoTime();
        for (int i = 0; i < members; i++) {
            GroupMember g = new GroupMember(clients.get(i % Math.min(sessions, clients.size())), path, "m" + i);
            g.start();
            gs.add(g);
        }
        long deadline = t0 + TimeUnit.SECONDS.toNanos(600);
        for (GroupMember g : gs) {
            while (g.getCurrentMembers().size() != members) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("group never agreed: " + g.getCurrentMembers().size() + " of " + members);
                }
                Thread.sleep(1);
            }
        }
        double took = (System.nanoTime() - t0) / 1e6;
        for (GroupMember g : gs) {
            g.close();
        }
        r.seconds = (System.nanoTime() - t0) / 1e9;
        r.cpu = cpuSeconds() - c0;
        r.ops = members;
        r.total = members;
        r.extra = new double[] {took};
        return r;
    }

    // ------------------------------------------------ group after an expiry
    static int sessionTimeoutMs;
    static final List<GroupMember> expMembers = new ArrayList<>();
    static CuratorFramework expClient;
    static volatile long expGoneNanos;
    static int expN;

    static void awaitMembers(List<GroupMember> gs, int want, long deadline) throws Exception {
        for (GroupMember g : gs) {
            while (g.getCurrentMembers().size() != want) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("group never agreed: " + g.getCurrentMembers().size() + " of " + want);
                }
                Thread.sleep(1);
            }
        }
    }

    static Result groupExpStart(String path, int members, int sessions, String connect) throws Exception {
        expGoneNanos = 0;
        expN = members;
        expClient = CuratorFrameworkFactory.newClient(
                connect, sessionTimeoutMs, Math.max(sessionTimeoutMs, 3000), new ExponentialBackoffRetry(100, 10));
        expClient.start();
        if (!expClient.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + connect + " within 30s");
        }
        for (int i = 0; i < members; i++) {
            CuratorFramework c = i < members - 1 ? clients.get(i % Math.min(sessions, clients.size())) : expClient;
            GroupMember g = new GroupMember(c, path, "m" + i);
            g.start();
            expMembers.add(g);
        }
        awaitMembers(expMembers, members, System.nanoTime() + TimeUnit.SECONDS.toNanos(600));
        org.apache.zookeeper.data.Stat st = clients.get(0).checkExists().usingWatcher((org.apache.curator.framework.api.CuratorWatcher) e -> {
            if (e.getType() == org.apache.zookeeper.Watcher.Event.EventType.NodeDeleted) {
                expGoneNanos = System.nanoTime();
            }
        }).forPath(path + "/m" + (members - 1));
        if (st == null) {
            throw new IllegalStateException("the last member's node is missing");
        }
        return new Result();
    }

    static Result groupExpWait() throws Exception {
        Result r = new Result();
        double c0 = cpuSeconds();
        long t0 = System.nanoTime();
        long deadline = t0 + TimeUnit.SECONDS.toNanos(600);
        while (expGoneNanos == 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the last member's session never expired");
            }
            Thread.sleep(1);
        }
        long gone = expGoneNanos;
        awaitMembers(expMembers.subList(0, expN - 1), expN - 1, deadline);
        long t1 = System.nanoTime();
        r.seconds = (t1 - t0) / 1e9;
        r.cpu = cpuSeconds() - c0;
        r.ops = r.total = expN - 1;
        r.extra = new double[] {(t1 - gone) / 1e6, (gone - t0) / 1e6};
        return r;
    }
}
