// Command bank is the demo "make demo" runs: worker processes move money
// between bank accounts under an inter-process mutex, one of them is
// killed while it holds the lock, another is frozen past its session
// timeout, and at the end the ledger is audited.
//
// The accounts (A to E, 200 each, 1000 in total) and a log of every
// transfer live in one znode. Each worker is a process of its own (this
// program started again with ZKRECIPES_BANK_WORKER set) with a ZooKeeper
// session of its own and a short session timeout (-session-timeout,
// default 2s), and loops: lock the mutex, read the ledger, move a random
// amount from one account to another, write the ledger back with a fenced
// write (Lease.Fenced: a multi that also checks that the writer's lock
// node still exists), unlock. The parent prints what they do as it
// happens: who holds the lock with which fencing token, every transfer
// and hand-off, times counted from the start. Then:
//
//   - act 1: the workers take turns;
//   - act 2: worker-2 is asked to stall in the middle of a transfer and is
//     killed with SIGKILL while it holds the lock; the others wait until
//     the server expires its session and deletes its lock node, and the
//     parent prints how long that took;
//   - act 3: worker-3 stalls in the middle of a transfer and is frozen
//     with SIGSTOP (a long GC pause, a frozen VM) until its session has
//     expired and the others have moved on, then woken with SIGCONT: it
//     writes its stale ledger at once, ZooKeeper refuses the write
//     (ErrFenced), the worker sees its lease's Done channel closed and
//     its session lost, and queues again with a new session;
//   - act 4: the others carry on; then every worker is told to stop.
//
// The parent then reads the ledger and audits it: the accounts must still
// hold 1000 together, replaying the log from the opening balances must
// give the balances written (no update lost), the fencing tokens in the
// log must strictly increase, and every transfer a worker reported
// written must be in the log and no other. The last line is the verdict:
//
//	verdict: OK: balance intact: 1000 = 1000 across 5 accounts after 61 transfers by 4 workers (1 killed, 1 paused past its session; 1 stale write refused)
//
// or "verdict: FAILED: ..." with exit status 1. The parent waits on
// events, not on timers, and gives up after -timeout; the demo takes
// about 15 seconds once ZooKeeper is up.
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper
// (see examples/internal/demo) and stops it at exit. It needs a Unix
// system (SIGSTOP). Run it with "make demo" or "go run ./examples/bank";
// "go run ./examples/bank -h" lists the flags.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/recipes"
)

var (
	workers        = flag.Int("workers", 4, "worker processes (at least 3: one is killed, one frozen)")
	sessionTimeout = flag.Duration("session-timeout", 2*time.Second, "the workers' ZooKeeper session timeout (the server may grant another)")
	work           = flag.Duration("work", 150*time.Millisecond, "how long a transfer takes while the lock is held")
	pace           = flag.Int("pace", 10, "transfers between two acts")
	timeout        = flag.Duration("timeout", 90*time.Second, "give up after this long")
)

func main() {
	flag.Parse()
	if name := os.Getenv(workerEnv); name != "" {
		if err := runWorker(name); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
		return
	}
	if *workers < 3 || *pace < 1 || *work < 0 || *sessionTimeout <= 0 || *timeout <= 0 {
		fmt.Fprintln(os.Stderr, "bank: want -workers >= 3, -pace >= 1, -work >= 0, a positive -session-timeout and -timeout")
		os.Exit(2)
	}
	fmt.Printf(`zkrecipes bank demo
%d worker processes share 5 accounts (A to E, %d in total) kept in one znode. Each
worker has its own ZooKeeper session (timeout %v) and loops: lock the mutex, read
the accounts, move a random amount from one to another, write them back with a
fenced write (applied only while the writer's lock node exists), unlock.
  act 1  the workers take turns: one line per transfer, with the holder's fencing token
  act 2  worker-2 is killed (SIGKILL) while it holds the lock
  act 3  worker-3 is frozen (SIGSTOP) while it holds the lock, past its session
         timeout, then woken (SIGCONT): its write is stale and must be refused
  act 4  the others carry on; then all stop and the ledger is audited
(worker-2 and worker-3 are asked to stall in the middle of a transfer, so that the
signals reach them while they hold the lock.) Each line starts with the time since
the start; the last line is the verdict.

`, *workers, total, *sessionTimeout)
	demo.Main(*timeout, run)
}

// proc is a worker process, as the parent sees it.
type proc struct {
	name      string
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	ready     bool
	transfers int
	stall     *event // its last stall event
	exited    bool
	expected  bool // killed or told to stop: its exit is no failure
}

// bank is the parent: it starts the workers, reads their events, prints
// them and keeps the score.
type bank struct {
	admin   *recipes.Client
	events  chan event
	procs   []*proc
	byName  map[string]*proc
	timeout time.Duration // the session timeout the server granted the workers

	moves      int
	lastHolder string
	acked      map[int64]string // token of each transfer reported written -> worker
	refusals   int
	lastToken  int64 // the latest transfer's token
	failure    error // a worker failed

	victim, sleeper *proc
	killedAt        time.Time
	passedAfterKill time.Duration
	frozenAt        time.Time
	passedAfterStop time.Duration
	staleToken      int64
	refused         bool // the frozen worker's stale write was refused
	staleAccepted   bool // ... or not
	noticed         bool // the frozen worker saw its hold was lost
	rejoined        bool // and wrote a transfer again, with its new session
}

func run(ctx context.Context, servers []string) error {
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	data, err := json.Marshal(newLedger())
	if err != nil {
		return err
	}
	if _, err := admin.Create(ctx, ledgerPath, data, 0); err != nil {
		return err
	}
	defer demo.DeleteTree(admin, base)

	b := &bank{admin: admin, events: make(chan event, 4096), byName: map[string]*proc{}, acked: map[int64]string{}}
	defer b.killAll()
	for i := 1; i <= *workers; i++ {
		if err := b.start(fmt.Sprintf("worker-%d", i), servers); err != nil {
			return err
		}
	}
	b.victim, b.sleeper = b.procs[1], b.procs[2]
	if err := b.await(ctx, "the workers to connect", func() bool {
		for _, p := range b.procs {
			if !p.ready {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}

	demo.Say("== act 1: the workers take turns on %s", lockPath)
	if err := b.await(ctx, "every worker to make a transfer", func() bool {
		for _, p := range b.procs {
			if p.transfers == 0 {
				return false
			}
		}
		return b.moves >= *pace
	}); err != nil {
		return err
	}

	demo.Say("== act 2: %s is killed (SIGKILL) while it holds the lock", b.victim.name)
	st, err := b.stall(ctx, b.victim)
	if err != nil {
		return err
	}
	b.watch(st.Node, b.victim.name, "kill")
	b.killedAt = time.Now()
	b.victim.expected = true
	if err := b.victim.cmd.Process.Kill(); err != nil {
		return err
	}
	demo.Say("parent     SIGKILL %s, which holds the lock (token 0x%x) in the middle of a transfer", b.victim.name, st.Token)
	demo.Say("parent     its lock node stays until the server expires its session (%v): the others wait", b.timeout)
	if err := b.await(ctx, "the lock to pass on after the kill", func() bool { return b.victim.exited && b.passedAfterKill > 0 }); err != nil {
		return err
	}
	if err := b.moreMoves(ctx, *pace); err != nil {
		return err
	}

	demo.Say("== act 3: %s is frozen (SIGSTOP) while it holds the lock, past its session timeout", b.sleeper.name)
	st, err = b.stall(ctx, b.sleeper)
	if err != nil {
		return err
	}
	b.staleToken = st.Token
	b.watch(st.Node, b.sleeper.name, "SIGSTOP")
	b.frozenAt = time.Now()
	if err := freeze(b.sleeper.cmd.Process); err != nil {
		return err
	}
	demo.Say("parent     SIGSTOP %s, which holds the lock (token 0x%x) and has computed its transfer: it is frozen, as in a long GC pause, and sends no heartbeats", b.sleeper.name, st.Token)
	if err := b.await(ctx, "the lock to pass on while "+b.sleeper.name+" is frozen", func() bool { return b.passedAfterStop > 0 }); err != nil {
		return err
	}
	if err := b.moreMoves(ctx, *pace); err != nil {
		return err
	}
	if err := thaw(b.sleeper.cmd.Process); err != nil {
		return err
	}
	demo.Say("parent     SIGCONT %s after %.1fs frozen (session timeout %v): it carries on where it stopped and writes the transfer it computed before", b.sleeper.name, time.Since(b.frozenAt).Seconds(), b.timeout)
	if err := b.send(b.sleeper, cmdResume); err != nil {
		return err
	}
	if err := b.await(ctx, "the stale write's fate", func() bool { return b.refused || b.staleAccepted }); err != nil {
		return err
	}
	if b.refused {
		if err := b.await(ctx, b.sleeper.name+" to notice its loss and make a transfer with its new session", func() bool { return b.noticed && b.rejoined }); err != nil {
			return err
		}
	}

	demo.Say("== act 4: the others carry on; then every worker is told to stop")
	if err := b.moreMoves(ctx, *pace); err != nil {
		return err
	}
	for _, p := range b.procs {
		if !p.exited {
			p.expected = true
			if err := b.send(p, cmdStop); err != nil {
				return err
			}
		}
	}
	if err := b.await(ctx, "the workers to stop", func() bool {
		for _, p := range b.procs {
			if !p.exited {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	return b.verdict()
}

// start starts one worker process.
func (b *bank) start(name string, servers []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe,
		"-session-timeout="+sessionTimeout.String(), "-work="+work.String(), "-timeout="+timeout.String())
	cmd.Env = append(os.Environ(), workerEnv+"="+name, demo.Env+"="+strings.Join(servers, ","))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, stdin: stdin}
	b.procs = append(b.procs, p)
	b.byName[name] = p

	read := func(r io.Reader, stderr bool, done chan<- struct{}) {
		defer close(done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			var e event
			if stderr || json.Unmarshal(sc.Bytes(), &e) != nil || e.Kind == "" {
				e = event{Kind: kindStderr, Msg: sc.Text()}
			}
			e.Worker = name
			b.events <- e
		}
	}
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go read(stdout, false, outDone)
	go read(stderr, true, errDone)
	go func() {
		<-outDone
		<-errDone
		err := cmd.Wait()
		how := "exit status 0"
		if err != nil {
			how = err.Error()
		}
		b.events <- event{Kind: kindExit, Worker: name, Msg: how}
	}()
	return nil
}

// send writes a command to a worker's standard input.
func (b *bank) send(p *proc, cmd string) error {
	if _, err := fmt.Fprintln(p.stdin, cmd); err != nil {
		return fmt.Errorf("%s: %s: %w", p.name, cmd, err)
	}
	return nil
}

// stall asks p to stop in the middle of its next transfer and waits until
// it has: it then holds the lock.
func (b *bank) stall(ctx context.Context, p *proc) (*event, error) {
	p.stall = nil
	if err := b.send(p, cmdStall); err != nil {
		return nil, err
	}
	if err := b.await(ctx, p.name+" to stall", func() bool { return p.stall != nil }); err != nil {
		return nil, err
	}
	return p.stall, nil
}

// moreMoves waits until the workers have written n more transfers.
func (b *bank) moreMoves(ctx context.Context, n int) error {
	want := b.moves + n
	return b.await(ctx, fmt.Sprintf("%d more transfers", n), func() bool { return b.moves >= want })
}

// await handles the workers' events until cond holds, a worker fails, or
// ctx ends.
func (b *bank) await(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		if b.failure != nil {
			return b.failure
		}
		select {
		case e := <-b.events:
			b.handle(e)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
	return b.failure
}

// watch tells (with an event) when the server deletes the lock node of
// who, which held the lock when the parent did what.
func (b *bank) watch(node, who, what string) {
	since := time.Now()
	ok, _, ch, err := b.admin.ExistsW(context.Background(), node)
	if err != nil || !ok {
		return
	}
	go func() {
		if ev := <-ch; ev.Type == zk.EventNodeDeleted {
			b.events <- event{Kind: kindGone, Worker: who, Node: node, Msg: fmt.Sprintf("%.1fs after the %s", time.Since(since).Seconds(), what)}
		}
	}()
}

// handle prints one event and keeps the score.
func (b *bank) handle(e event) {
	p := b.byName[e.Worker]
	name := fmt.Sprintf("%-10s", e.Worker)
	switch e.Kind {
	case kindReady:
		p.ready = true
		b.timeout = e.Timeout
		demo.Say("%s connected: session 0x%x, session timeout %v", name, e.Session, e.Timeout)
	case kindMoved:
		if b.victim != nil && !b.killedAt.IsZero() && b.passedAfterKill == 0 && p != b.victim && e.Acquired.After(b.killedAt) {
			b.passedAfterKill = e.Acquired.Sub(b.killedAt)
			demo.Say("parent     the lock passed on to %s %.1fs after the kill (session timeout %v)", e.Worker, b.passedAfterKill.Seconds(), b.timeout)
		}
		if b.sleeper != nil && !b.frozenAt.IsZero() && b.passedAfterStop == 0 && p != b.sleeper && e.Acquired.After(b.frozenAt) {
			b.passedAfterStop = e.Acquired.Sub(b.frozenAt)
			demo.Say("parent     the lock passed on to %s %.1fs after %s froze (session timeout %v)", e.Worker, b.passedAfterStop.Seconds(), b.sleeper.name, b.timeout)
		}
		from := ""
		if b.lastHolder != "" && b.lastHolder != e.Worker {
			from = "from " + b.lastHolder
		}
		demo.Say("%s holds token %-6s %-14s moved %3d %s -> %s   %s", name, fmt.Sprintf("0x%x", e.Token), from, e.Amount, e.From, e.To, formatBalances(e.Balances))
		b.lastHolder = e.Worker
		b.moves++
		p.transfers++
		b.acked[e.Token] = e.Worker
		b.lastToken = max(b.lastToken, e.Token)
		if p == b.sleeper && b.staleToken != 0 {
			if e.Token == b.staleToken {
				b.staleAccepted = true
				demo.Say("%s its STALE WRITE WAS ACCEPTED: the ledger is broken", name)
			} else if b.refused {
				b.rejoined = true
			}
		}
	case kindStall:
		p.stall = &e
		b.lastHolder = e.Worker
		demo.Say("%s holds token 0x%x: has read the accounts and is about to move %d %s -> %s ... and stalls there, as asked", name, e.Token, e.Amount, e.From, e.To)
	case kindRefused:
		b.refusals++
		if p == b.sleeper && e.Token == b.staleToken {
			b.refused = true
		}
		demo.Say("%s its write (token 0x%x, %d %s -> %s) was REFUSED: %s", name, e.Token, e.Amount, e.From, e.To, e.Msg)
		if b.lastToken > e.Token {
			demo.Say("parent     its token 0x%x is below the latest writer's 0x%x: a store that keeps the largest token seen would refuse it too", e.Token, b.lastToken)
		}
	case kindLost:
		if p == b.sleeper && e.Lost {
			b.noticed = true
		}
		demo.Say("%s notices it lost the lock: %s; it queues again with its new session 0x%x", name, e.Msg, e.Session)
	case kindState:
		demo.Say("%s connection %s (session 0x%x)", name, e.State, e.Session)
	case kindNote:
		demo.Say("%s %s", name, e.Msg)
	case kindStderr:
		demo.Say("%s (stderr) %s", name, e.Msg)
	case kindDone:
		demo.Say("%s stopped after %d transfers", name, e.Transfers)
	case kindGone:
		demo.Say("zookeeper  deleted %s's lock node %s, %s: its session expired", e.Worker, e.Node[strings.LastIndex(e.Node, "/")+1:], e.Msg)
	case kindExit:
		p.exited = true
		if !p.expected {
			b.failure = fmt.Errorf("%s exited unexpectedly (%s)", e.Worker, e.Msg)
		}
		if p == b.victim || !p.expected {
			demo.Say("%s exited: %s", name, e.Msg)
		}
	}
}

// killAll kills the workers still running (after a failure) and waits a
// little for them to go.
func (b *bank) killAll() {
	live := 0
	for _, p := range b.procs {
		if !p.exited {
			p.expected = true
			p.cmd.Process.Kill() // SIGKILL ends a stopped process too
			live++
		}
	}
	deadline := time.After(5 * time.Second)
	for live > 0 {
		select {
		case e := <-b.events:
			if e.Kind == kindExit {
				live--
			}
		case <-deadline:
			return
		}
	}
}

// verdict reads the ledger, audits it and prints the verdict.
func (b *bank) verdict() error {
	if err := b.admin.Sync(context.Background(), ledgerPath); err != nil {
		return err
	}
	data, _, err := b.admin.Get(context.Background(), ledgerPath)
	if err != nil {
		return err
	}
	l, err := parseLedger(data)
	if err != nil {
		return err
	}
	problems := l.audit()
	for token, w := range b.acked {
		if !l.has(token) {
			problems = append(problems, fmt.Sprintf("%s's transfer with token 0x%x was written but is not in the ledger", w, token))
		}
	}
	for _, e := range l.Log {
		if _, ok := b.acked[e.Token]; !ok {
			problems = append(problems, fmt.Sprintf("the ledger holds a transfer by %s (token 0x%x) that no worker reported written", e.Worker, e.Token))
		}
	}
	if b.passedAfterKill == 0 {
		problems = append(problems, "the lock did not pass on after the kill")
	}
	if !b.refused {
		problems = append(problems, "the frozen worker's stale write was not refused")
	}
	if !b.noticed {
		problems = append(problems, "the frozen worker did not notice its loss")
	}

	var per []string
	for _, p := range b.procs {
		s := fmt.Sprintf("%s %d", p.name, p.transfers)
		switch p {
		case b.victim:
			s += " (killed)"
		case b.sleeper:
			s += " (frozen)"
		}
		per = append(per, s)
	}
	demo.Say("== audit")
	demo.Say("ledger     %s   sum %d", formatBalances(l.balances()), l.sum())
	if n := len(l.Log); n > 0 {
		demo.Say("ledger     %d transfers logged, tokens 0x%x ... 0x%x; by worker: %s", n, l.Log[0].Token, l.Log[n-1].Token, strings.Join(per, ", "))
	}
	demo.Say("ledger     replayed from the opening balances: %s", map[bool]string{true: "it gives the balances written, tokens strictly increase", false: "MISMATCH"}[len(l.audit()) == 0])

	balance := fmt.Sprintf("balance intact: %d = %d", l.sum(), total)
	if l.sum() != total {
		balance = fmt.Sprintf("balance BROKEN: %d != %d", l.sum(), total)
	}
	writes := "writes"
	if b.refusals == 1 {
		writes = "write"
	}
	msg := fmt.Sprintf("%s across %d accounts after %d transfers by %d workers (1 killed, 1 paused past its session; %d stale %s refused)",
		balance, len(accountNames), len(l.Log), len(b.procs), b.refusals, writes)
	if len(problems) > 0 {
		msg += ": " + strings.Join(problems, "; ")
	}
	return demo.Verdict(len(problems) == 0, "%s", msg)
}
