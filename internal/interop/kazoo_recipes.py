"""Drive real Kazoo recipes for zkrecipes' interop tests.

Run with Debian's interpreter (which has python3-kazoo), not whatever
python3 is first on PATH:

    /usr/bin/python3 -I -u kazoo_recipes.py <mode> <args...>

The Go package internal/interop embeds this file and writes it to a
temporary directory before running it.

Protocol with the Go test (line based, UTF-8): stdout carries protocol lines
only ("READY", "ACQUIRED", "RELEASED", node paths); diagnostics go to
stderr; stdin carries commands ("GO", or any line to release a holder). Any
exception prints "ERROR: ..." and a traceback on stderr and exits 1.

Modes (mirroring CuratorRecipes.java):

  mutex <hosts> <path> <iterations> <outFile> <holdMillis>
      Connects, prints READY, waits for a line "GO" on stdin, then acquires
      the lock <iterations> times, appending "start end" (wall-clock epoch
      nanoseconds from time.time_ns(), start right after acquire returned,
      end right before release) per hold to outFile, flushed per line, and
      finally "done <iterations>".

  participants <hosts> <path>
      Prints the lock's contender nodes as full paths, one per line, in the
      order Kazoo's own Lock.contenders() sorts them, and exits 0.

  holder <hosts> <path>
      Acquires the lock, prints ACQUIRED, waits for any line (or EOF) on
      stdin, releases, prints RELEASED and exits 0.

The lock is kazoo.recipe.lock.Lock(client, path, identifier,
extra_lock_patterns=PATTERNS). PATTERNS comes from the environment variable
KAZOO_EXTRA_LOCK_PATTERNS (comma separated; set but empty means none) and
defaults to "-lock-", which makes Kazoo treat Curator's and zkrecipes'
mutex nodes "_c_<uuid>-lock-<seq>" as contenders. Kazoo joins the patterns
unescaped into the regular expression (?:__lock__|PATTERNS)(-?\\d{10})$,
searched anywhere in each child name, and sorts the matches by the captured
sequence text.

  counter <hosts> <path> <iterations>
      kazoo.recipe.counter.Counter(client, path, support_curator=True) (4
      bytes big-endian, Curator's SharedCount and DistributedAtomicInteger
      layout). Prints READY, waits for "GO", adds 1 <iterations> times
      (Kazoo retries a lost compare-and-set itself, without bound here),
      then prints "DONE <iterations> <last post_value>".

  barrier <hosts> <path>
      kazoo.recipe.barrier.Barrier(client, path). Prints READY, then reads
      commands from stdin until EOF: "SET" (create, prints "SET"),
      "REMOVE" (prints "REMOVED True|False"), "WAIT <ms>" (wait with a
      timeout, prints "WAITED True|False": True when the barrier is down).

To add a mode, write a function taking the argument list and register it in
MODES.
"""

import os
import socket
import sys
import time
import traceback

# ZKRECIPES_KAZOO_PATH names another Kazoo (Debian unstable's 2.11, unpacked
# by scripts/install-deps.sh zk39): -I ignores PYTHONPATH, not os.environ.
if os.environ.get("ZKRECIPES_KAZOO_PATH"):
    sys.path.insert(0, os.environ["ZKRECIPES_KAZOO_PATH"])

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock

SESSION_TIMEOUT_S = 4.0
CONNECT_WAIT_S = 30.0


def extra_patterns():
    raw = os.environ.get("KAZOO_EXTRA_LOCK_PATTERNS")
    if raw is None:
        return ("-lock-",)
    return tuple(p for p in raw.split(",") if p)


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def await_line(want):
    while True:
        line = sys.stdin.readline()
        if line == "":
            raise EOFError("stdin closed while waiting for %r" % want)
        if line.strip() == want:
            return


def connect(hosts, **kw):
    client = KazooClient(hosts=hosts, timeout=SESSION_TIMEOUT_S, **kw)
    client.start(timeout=CONNECT_WAIT_S)
    return client


def close(client):
    try:
        client.stop()
    finally:
        client.close()


def new_lock(client, path):
    ident = "kazoo-%s-%d" % (socket.gethostname(), os.getpid())
    return Lock(client, path, ident, extra_lock_patterns=extra_patterns())


def need(args, n, mode):
    if len(args) != n:
        raise ValueError("%s wants %d arguments: %s; got %r"
                         % (mode, n, USAGE[mode], args))


def mode_mutex(args):
    need(args, 5, "mutex")
    hosts, path, iterations, out_file, hold_ms = args
    iterations = int(iterations)
    hold = int(hold_ms) / 1000.0
    client = connect(hosts)
    try:
        lock = new_lock(client, path)
        with open(out_file, "a", encoding="utf-8") as out:
            say("READY")
            await_line("GO")
            for _ in range(iterations):
                lock.acquire()
                try:
                    start = time.time_ns()
                    if hold > 0:
                        time.sleep(hold)
                    end = time.time_ns()
                finally:
                    lock.release()
                out.write("%d %d\n" % (start, end))
                out.flush()
            out.write("done %d\n" % iterations)
            out.flush()
    finally:
        close(client)


def mode_participants(args):
    need(args, 2, "participants")
    hosts, path = args
    client = connect(hosts)
    try:
        lock = new_lock(client, path)
        # Lock.contenders() returns the contenders' data, not their names,
        # but it reads each node with client.get in its sorted order.
        # Recording those reads yields the node order from Kazoo's own code.
        order = []
        real_get = client.get

        def recording_get(p, *a, **kw):
            order.append(p)
            return real_get(p, *a, **kw)

        client.get = recording_get
        try:
            lock.contenders()
        finally:
            client.get = real_get
        for p in order:
            say(p)
    finally:
        close(client)


def mode_holder(args):
    need(args, 2, "holder")
    hosts, path = args
    client = connect(hosts)
    try:
        lock = new_lock(client, path)
        lock.acquire()
        say("ACQUIRED")
        sys.stdin.readline()  # any line, or EOF, releases
        lock.release()
        say("RELEASED")
    finally:
        close(client)


def mode_counter(args):
    need(args, 3, "counter")
    hosts, path, iterations = args
    iterations = int(iterations)
    from kazoo.recipe.counter import Counter
    # Under contention a compare-and-set loses often: retry without bound,
    # with short pauses (Kazoo's default command retry makes one try).
    client = connect(hosts, command_retry=dict(
        max_tries=-1, delay=0.002, backoff=2, max_jitter=0.5, max_delay=0.05))
    try:
        counter = Counter(client, path, support_curator=True)
        say("READY")
        await_line("GO")
        for _ in range(iterations):
            counter += 1
        say("DONE %d %d" % (iterations, counter.post_value))
    finally:
        close(client)


def mode_barrier(args):
    need(args, 2, "barrier")
    hosts, path = args
    from kazoo.recipe.barrier import Barrier
    client = connect(hosts)
    try:
        b = Barrier(client, path)
        say("READY")
        for line in sys.stdin:
            cmd = line.split()
            if not cmd:
                continue
            if cmd[0] == "SET":
                b.create()
                say("SET")
            elif cmd[0] == "REMOVE":
                say("REMOVED %s" % b.remove())
            elif cmd[0] == "WAIT":
                say("WAITED %s" % b.wait(int(cmd[1]) / 1000.0))
            else:
                raise ValueError("unknown command %r" % line)
    finally:
        close(client)


MODES = {
    "mutex": mode_mutex,
    "participants": mode_participants,
    "holder": mode_holder,
    "counter": mode_counter,
    "barrier": mode_barrier,
}

USAGE = {
    "mutex": "<hosts> <path> <iterations> <outFile> <holdMillis>",
    "participants": "<hosts> <path>",
    "holder": "<hosts> <path>",
    "counter": "<hosts> <path> <iterations>",
    "barrier": "<hosts> <path>",
}


def main(argv):
    if len(argv) < 1 or argv[0] not in MODES:
        usage = "".join("  kazoo_recipes.py %s %s\n" % kv for kv in USAGE.items())
        sys.stderr.write("ERROR: unknown mode; usage:\n" + usage)
        return 1
    try:
        MODES[argv[0]](argv[1:])
    except BaseException as e:  # noqa: B902 - report everything, then exit 1
        sys.stderr.write("ERROR: %r\n" % (e,))
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
