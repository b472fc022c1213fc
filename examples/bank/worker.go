package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// workerEnv names the worker a process is to be; the parent sets it when
// it starts this same program again as a worker.
const workerEnv = "ZKRECIPES_BANK_WORKER"

// Commands the parent sends to a worker's standard input, one a line.
const (
	cmdStall  = "stall"  // at the next hold, stop after reading the accounts, before writing
	cmdResume = "resume" // a stalled worker writes (what it computed before it stalled)
	cmdStop   = "stop"   // finish the transfer under way, release, exit
)

// worker is one worker process: a session of its own, contending for the
// lock with the others.
type worker struct {
	name string
	c    *recipes.Client
	m    *mutex.Mutex
	work time.Duration

	outMu sync.Mutex
	out   *json.Encoder

	stallNext atomic.Bool
	resume    chan struct{}
	stop      context.Context // ends at cmdStop or when the parent goes away
}

func (w *worker) emit(e event) {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.out.Encode(e) // a write error means the parent is gone; stdin's EOF stops us
}

func (w *worker) note(format string, args ...any) {
	w.emit(event{Kind: kindNote, Msg: fmt.Sprintf(format, args...)})
}

// runWorker is the body of a worker process. It prints events as JSON
// lines and reads commands from its standard input; it stops at cmdStop,
// when its standard input closes (the parent is gone) or at the deadline.
func runWorker(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	servers := strings.Split(os.Getenv(demo.Env), ",")
	c, err := demo.Connect(servers, *sessionTimeout)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	m, err := mutex.New(c, lockPath, mutex.WithData([]byte(name)))
	if err != nil {
		return err
	}
	stop, stopNow := context.WithCancel(ctx)
	defer stopNow()
	w := &worker{name: name, c: c, m: m, work: *work, out: json.NewEncoder(os.Stdout), resume: make(chan struct{}, 1), stop: stop}
	unlisten := c.Listen(func(s recipes.State) { w.emit(event{Kind: kindState, State: s.String(), Session: c.SessionID()}) })
	defer unlisten()
	go func() {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			switch in.Text() {
			case cmdStall:
				w.stallNext.Store(true)
			case cmdResume:
				select {
				case w.resume <- struct{}{}:
				default:
				}
			case cmdStop:
				stopNow()
			}
		}
		stopNow()
	}()
	w.emit(event{Kind: kindReady, Session: c.SessionID(), Timeout: c.SessionTimeout()})

	transfers := 0
	for stop.Err() == nil {
		lease, err := m.Acquire(stop)
		if err != nil {
			if stop.Err() != nil {
				break
			}
			if errors.Is(err, recipes.ErrSessionLost) || recipes.IsRetryable(err) {
				w.note("lock: %v; queueing again once connected", err)
				if err := c.WaitConnected(stop); err != nil {
					break
				}
				continue
			}
			return fmt.Errorf("lock: %w", err)
		}
		moved, err := w.transfer(ctx, lease)
		if err != nil {
			return err
		}
		if moved {
			transfers++
		}
	}
	w.emit(event{Kind: kindDone, Transfers: transfers})
	return nil
}

// transfer makes one transfer under lease and releases it. It reports
// whether the transfer was written.
func (w *worker) transfer(ctx context.Context, lease *mutex.Lease) (bool, error) {
	acquired := time.Now()
	defer func() {
		if err := lease.Release(ctx); err != nil && !errors.Is(err, recipes.ErrLockLost) {
			w.note("unlock: %v", err)
		}
	}()
	tok, err := lease.Token(ctx) // the ledger keeps its czxid (no local hand-offs here)
	token := tok.Czxid
	if err != nil {
		w.note("lost the lock before reading its token: %v", err)
		return false, nil
	}
	var data []byte
	if err := w.c.Retry(ctx, func() (err error) { data, _, err = w.c.Get(ctx, ledgerPath); return err }); err != nil {
		return false, fmt.Errorf("read the ledger: %w", err)
	}
	l, err := parseLedger(data)
	if err != nil {
		return false, err
	}
	e := l.transfer(w.name, token)
	if data, err = json.Marshal(l); err != nil {
		return false, err
	}

	if w.stallNext.Swap(false) {
		w.emit(event{Kind: kindStall, Token: token, Node: lease.Node(), From: e.From, To: e.To, Amount: e.Amount})
		select {
		case <-w.resume:
		case <-w.stop.Done():
			return false, nil
		}
		// A process resumed after a pause carries on where it stopped: it
		// writes at once, with no chance to look at lease.Done() first.
		// Only the fencing stands between its stale ledger and the data.
	} else {
		// The work a transfer takes. A careful holder gives up when its
		// hold may be gone, before it writes.
		t := time.NewTimer(w.work)
		select {
		case <-t.C:
		case <-lease.Done():
			t.Stop()
			w.note("lease.Done() closed before the write (connection %v): transfer abandoned", w.c.State())
			return false, nil
		}
	}

	applied, err := w.write(ctx, lease, token, data)
	switch {
	case applied:
		w.emit(event{Kind: kindMoved, Token: token, From: e.From, To: e.To, Amount: e.Amount, Balances: l.balances(), Acquired: acquired})
		return true, nil
	case errors.Is(err, recipes.ErrFenced):
		w.emit(event{Kind: kindRefused, Token: token, Msg: err.Error(), From: e.From, To: e.To, Amount: e.Amount})
		w.noticeLoss(ctx, lease)
		return false, nil
	case ctx.Err() != nil:
		return false, nil
	default:
		return false, fmt.Errorf("fenced write: %w", err)
	}
}

// write writes data to the ledger with a fenced write: a multi that also
// checks that the lock node of lease still exists. It reports whether the
// write was applied.
//
// When the connection fails under the write, its outcome is unknown, and
// the same write is tried again once connected. That is safe because it is
// fenced too: the server applies it only while our lock node exists, and
// a lock node that is gone never comes back. So if it passes, we have held
// the lock since we read the ledger, nobody else wrote, and writing the
// same ledger again changes nothing. If it is refused, the ledger's log
// tells whether the first attempt was applied.
func (w *worker) write(ctx context.Context, lease *mutex.Lease, token int64, data []byte) (bool, error) {
	unsure := false
	for {
		_, err := lease.Fenced(ctx, recipes.SetOp(ledgerPath, data, -1))
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, recipes.ErrFenced):
			if !unsure {
				return false, err
			}
			var now []byte
			if err := w.c.Retry(ctx, func() (err error) { now, _, err = w.c.Get(ctx, ledgerPath); return err }); err != nil {
				return false, fmt.Errorf("read the ledger: %w", err)
			}
			l, perr := parseLedger(now)
			if perr != nil {
				return false, perr
			}
			if l.has(token) {
				return true, nil
			}
			return false, err
		case ctx.Err() != nil:
			return false, err
		}
		unsure = true
		w.note("write interrupted (%v): trying again, still fenced, once connected", err)
		if err := w.c.WaitConnected(ctx); err != nil {
			return false, err
		}
		if err := demo.Pause(ctx, 100*time.Millisecond); err != nil { // the client may not have seen the loss yet
			return false, err
		}
	}
}

// noticeLoss reports what the worker learns once its write was refused:
// its lease's Done channel has closed, because its session was lost.
func (w *worker) noticeLoss(ctx context.Context, lease *mutex.Lease) {
	select {
	case <-lease.Done():
	case <-ctx.Done():
		return
	}
	if err := w.c.WaitConnected(ctx); err != nil {
		return
	}
	w.emit(event{Kind: kindLost, Lost: lease.IsLost(), Session: w.c.SessionID(),
		Msg: fmt.Sprintf("lease.Done() is closed, IsLost() = %v", lease.IsLost())})
}
