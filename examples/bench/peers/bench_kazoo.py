"""Run the peers workloads of zkrecipes' benchmark with Kazoo 2.8.

The benchmark (examples/bench, -which peers) embeds this file and runs it
with Debian's interpreter, which has python3-kazoo:

    /usr/bin/python3 -I -u bench_kazoo.py <hosts> <sessionTimeoutSeconds> <sessions>

It connects <sessions> KazooClients (one ZooKeeper session each), prints
READY, then serves one command per stdin line and answers each with one
line (diagnostics go to stderr). The commands and the answer are those of
BenchCurator.java next to this file:

    cycle <path> <n>
    contend <path> <sessions> <millis>
    queue <path> <waiters> <sessions>          prints QUEUED once the waiters'
                                               nodes exist, then waits for GO
    rwlock <path> <sessions> <millis>          Kazoo's own ReadLock (its
                                               node names are not Curator's)
    semaphore <path> <sessions> <leases> <millis>
    exit

    DONE <ops> <seconds> <cpuSeconds> <total> <most>

cpuSeconds is time.process_time(): this process's CPU time, all threads.
On a failure or a broken invariant it prints "ERROR <message>" and exits 1.
"""

import sys
import threading
import time
import traceback

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock, ReadLock, Semaphore

CLIENTS = []


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Result:
    def __init__(self):
        self.ops = self.total = self.most = 0
        self.seconds = self.cpu = 0.0

    def line(self):
        return "DONE %d %.9f %.9f %d %d" % (self.ops, self.seconds, self.cpu, self.total, self.most)


def cycle(path, n):
    lock = Lock(CLIENTS[0], path, "bench")
    r = Result()
    cpu0, t0 = time.process_time(), time.monotonic()
    for _ in range(n):
        lock.acquire()
        lock.release()
    r.seconds = time.monotonic() - t0
    r.cpu = time.process_time() - cpu0
    r.ops = r.total = n
    r.most = 1
    return r


def timed(sessions, millis, most_allowed, make):
    """One thread per session loops acquire; release for millis, checking
    that at most most_allowed hold at once. make(client) returns a pair of
    functions (acquire, release)."""
    holds = [make(CLIENTS[i]) for i in range(sessions)]
    guard = threading.Lock()
    state = {"holders": 0, "most": 0, "window": 0, "all": 0}
    failed = []
    r = Result()
    cpu0 = time.process_time()
    deadline = time.monotonic() + millis / 1000.0

    def loop(acquire, release):
        try:
            while not failed and time.monotonic() < deadline:
                acquire()
                with guard:
                    state["holders"] += 1
                    state["most"] = max(state["most"], state["holders"])
                    if state["holders"] > most_allowed:
                        failed.append("%d holders at once, at most %d allowed"
                                      % (state["holders"], most_allowed))
                    if time.monotonic() < deadline:
                        state["window"] += 1
                    state["all"] += 1
                # Another thread may count itself in between: an overlap
                # of holds shows as a count over the maximum.
                with guard:
                    state["holders"] -= 1
                release()
        except BaseException as e:  # noqa: B902 - reported to the benchmark
            failed.append(repr(e))
            traceback.print_exc(file=sys.stderr)

    threads = [threading.Thread(target=loop, args=h) for h in holds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise RuntimeError(failed[0])
    r.cpu = time.process_time() - cpu0
    r.seconds = millis / 1000.0
    r.ops, r.total, r.most = state["window"], state["all"], state["most"]
    return r


def queue(path, waiters, sessions):
    holder = Lock(CLIENTS[0], path, "holder")
    holder.acquire()
    guard = threading.Lock()
    state = {"holders": 0}
    failed = []

    def wait(lock):
        try:
            lock.acquire()
            with guard:
                state["holders"] += 1
                if state["holders"] != 1:
                    failed.append("two holders at once")
            with guard:
                state["holders"] -= 1
            lock.release()
        except BaseException as e:  # noqa: B902 - reported to the benchmark
            failed.append(repr(e))
            traceback.print_exc(file=sys.stderr)

    threads = []
    for i in range(waiters):
        t = threading.Thread(target=wait, args=(Lock(CLIENTS[i % sessions], path, "w%d" % i),))
        t.start()
        threads.append(t)
    limit = time.monotonic() + 120
    while len(CLIENTS[0].get_children(path)) < waiters + 1:
        if failed or time.monotonic() > limit:
            raise RuntimeError("waiters did not queue within two minutes: %s" % failed)
        time.sleep(0.02)
    say("QUEUED")
    go = sys.stdin.readline()
    if go.strip() != "GO":
        raise RuntimeError("queue: want GO, got %r" % go)
    r = Result()
    cpu0, t0 = time.process_time(), time.monotonic()
    holder.release()
    for t in threads:
        t.join()
    r.seconds = time.monotonic() - t0
    r.cpu = time.process_time() - cpu0
    if failed:
        raise RuntimeError(failed[0])
    r.ops = r.total = waiters
    r.most = 1
    return r


def mutex_hold(lock):
    return lock.acquire, lock.release


def semaphore_hold(sem):
    return sem.acquire, sem.release


def serve(f):
    cmd = f[0]
    if cmd == "cycle":
        return cycle(f[1], int(f[2]))
    if cmd == "contend":
        return timed(int(f[2]), int(f[3]), 1, lambda c: mutex_hold(Lock(c, f[1], "bench")))
    if cmd == "rwlock":
        return timed(int(f[2]), int(f[3]), 1 << 30, lambda c: mutex_hold(ReadLock(c, f[1], "bench")))
    if cmd == "semaphore":
        leases = int(f[3])
        return timed(int(f[2]), int(f[4]), leases,
                     lambda c: semaphore_hold(Semaphore(c, f[1], "bench", max_leases=leases)))
    if cmd == "queue":
        return queue(f[1], int(f[2]), int(f[3]))
    raise ValueError("unknown command %r" % " ".join(f))


def main(argv):
    code = 0
    try:
        if len(argv) != 3:
            raise ValueError("usage: bench_kazoo.py <hosts> <sessionTimeoutSeconds> <sessions>")
        hosts, timeout, n = argv[0], float(argv[1]), int(argv[2])
        for _ in range(n):
            c = KazooClient(hosts=hosts, timeout=timeout)
            c.start(timeout=30)
            CLIENTS.append(c)
        say("READY")
        while True:
            line = sys.stdin.readline()
            if line == "":
                break
            f = line.split()
            if not f:
                continue
            if f[0] == "exit":
                break
            say(serve(f).line())
    except BaseException as e:  # noqa: B902 - report everything, then exit 1
        say("ERROR %r" % (e,))
        traceback.print_exc(file=sys.stderr)
        code = 1
    for c in CLIENTS:
        try:
            c.stop()
            c.close()
        except Exception:  # noqa: BLE001 - closing on the way out
            pass
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
