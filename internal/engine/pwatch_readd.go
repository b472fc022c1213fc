package engine

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// The persistent watches set again on each new connection: one goroutine
// for the client, kicked by each connection that becomes usable.

// startReadding starts the goroutine that sets the watches again on each
// new connection, once.
func (c *Client) startReadding() {
	c.pw.readding.Do(func() { c.background(c.pw.readdLoop) })
}

// readdLoop sets every watch again on each connection that becomes
// usable, and after a failure under the retry policy.
func (p *pwatches) readdLoop() {
	c := p.c
	var (
		retry = c.Backoff()
		timer *time.Timer
		again <-chan time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-p.kick:
		case <-again:
			again = nil
		case <-c.closeCh:
			return
		}
		if err := p.readdAll(); err == nil {
			retry.Reset()
			continue
		}
		d := retry.Pace()
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Stop()
			timer.Reset(d)
		}
		again = timer.C
	}
}

// readdAll sends addWatch for every watch the current connection lacks,
// all at once, and waits for the replies. An error asks for another try
// later; a connection that ends is not one (the next one kicks).
func (p *pwatches) readdAll() error {
	c := p.c
	if p.unsupported.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(c.SessionTimeout(), time.Second))
	defer cancel()
	go func() { // Close ends ctx too
		select {
		case <-c.closeCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := p.lock(ctx); err != nil {
		return nil
	}
	defer p.unlock()
	wc := c.wire.usableConn()
	if wc == nil {
		return nil
	}
	p.mu.Lock()
	var todo []*pwEntry
	for _, e := range p.entries {
		if e.on != wc {
			todo = append(todo, e)
		}
	}
	p.mu.Unlock()
	type sent struct {
		e *pwEntry
		r *wireCall
	}
	var calls []sent
	for _, e := range todo {
		r, err := p.sendAddWatch(ctx, wc, e)
		if err != nil {
			break // the connection is going
		}
		calls = append(calls, sent{e, r})
	}
	var failed error
	for _, s := range calls {
		err := p.addWatchErr(p.waitWire(ctx, wc, s.r))
		switch {
		case err == nil, zkerr.IsRetryable(err), ctx.Err() != nil && c.Check() != nil:
			continue
		}
		p.mu.Lock()
		for o := range s.e.owners {
			o.q.Push(PersistentEvent{Kind: PersistentFailed, Err: err})
		}
		p.mu.Unlock()
		c.log.Warn("zkrecipes: setting a persistent watch again failed", "path", c.Namespace().Strip(s.e.path), "err", err)
		if !errors.Is(err, zkerr.ErrUnimplemented) {
			failed = err
		}
	}
	return failed
}

// Wake returns a channel that receives when events may be waiting: take
// them with Poll. It is for an owner that waits on other things too (the
// replies of its reads); Events is for one that waits on the watch alone.
func (w *PersistentWatch) Wake() <-chan struct{} { return w.q.Wake() }

// Poll returns the events waiting, without blocking (none: nothing yet);
// ok is false once the watch is removed or the client closed.
func (w *PersistentWatch) Poll() (events []PersistentEvent, ok bool) { return w.q.Poll() }

// eachRead is what ReadEach set, and the last read it started of each
// node whose reply may still say something of events to come.
type eachRead struct {
	ctx  context.Context
	want func(ev PersistentEvent, last *AsyncRead) (read, statOnly bool)
	last map[string]*AsyncRead
}

// ReadEach makes the watch start a read of an event's node as the event
// comes, before any later frame of the connection is read, as the Java
// client's event thread does for Curator's CuratorCache: when want (called
// on the client's receiving goroutine, in the events' order: it must not
// block) says so, the event's Read is the read (its stat alone with
// statOnly), sent under ctx. The read goes out after every event before
// it, and so sees the node as of its event or later; reads started this
// way go out in the events' order. want is given the last read started
// this way of the event's node when that read may have been answered
// after the event came (its reply is not in, or its Routed is at least
// the event's Seq), nil otherwise.
func (w *PersistentWatch) ReadEach(ctx context.Context, want func(ev PersistentEvent, last *AsyncRead) (read, statOnly bool)) {
	w.c.pw.mu.Lock()
	defer w.c.pw.mu.Unlock()
	w.reader = &eachRead{ctx: ctx, want: want, last: map[string]*AsyncRead{}}
}

// start asks want about ev and starts its read. It runs on the client's
// receiving goroutine only (route), which alone touches r.last.
func (r *eachRead) start(c *Client, ev *PersistentEvent) {
	last := r.last[ev.Path]
	if last != nil && !last.pending(ev.Seq) {
		delete(r.last, ev.Path)
		last = nil
	}
	read, statOnly := r.want(*ev, last)
	if !read {
		return
	}
	ev.Read = c.ReadAsync(r.ctx, ev.Path, statOnly)
	r.last[ev.Path] = ev.Read
	if len(r.last) > 4096 { // nodes not heard of since
		for p, a := range r.last {
			if !a.pending(ev.Seq) {
				delete(r.last, p)
			}
		}
	}
}
