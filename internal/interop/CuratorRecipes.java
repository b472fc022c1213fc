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
// To add a mode (rwlock, semaphore, leader latch...), write a static method
// with the Mode signature and register it in MODES.

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

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
}
