package zktest

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy between ZooKeeper clients and one server that injects
// network faults on the client side: Cut closes the connections, Blackhole
// silently drops all traffic (the server then expires sessions that stay
// black-holed longer than their timeout), and CutAfterClientSends loses the
// reply to one chosen request. Connect a client to Addr instead of the
// server's address. A Proxy is safe for concurrent use; Close stops every
// goroutine it started.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // canceled by Close: aborts dials to the target
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	links     map[*link]struct{}
	blackhole bool
	armed     []byte // CutAfterClientSends pattern; nil when not armed
	onFire    func() // called when the armed pattern has gone to the server
	latency   time.Duration
	closed    bool
	tls       *proxyTLS // nil: plain
}

// link is one proxied client connection.
type link struct {
	p      *Proxy
	client net.Conn
	// The fields below are guarded by p.mu.
	server     net.Conn // nil while dialing, and for links accepted during a black-hole
	blackholed bool     // drop everything in both directions; closed by Restore
	frozen     bool     // reply lost: drop server->client bytes, then close
	closed     bool
	halves     int    // directions still forwarding; the link is closed at 0
	tail       []byte // end of the previous client chunk, for patterns split across chunks
}

// proxyBufSize is the size of each direction's copy buffer.
const proxyBufSize = 32 << 10

// drainTimeout bounds how long a link whose reply is being lost keeps
// reading (and discarding) the server's bytes before it is closed.
const drainTimeout = 2 * time.Second

// NewProxy starts a Proxy on a free port of 127.0.0.1 that forwards to
// target (a "host:port", typically one of Cluster.Servers) and closes it when
// the test ends. It fails the test if it cannot listen.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := ListenProxy(target)
	if err != nil {
		t.Fatalf("zktest: %v", err)
		return nil
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// ListenProxy starts a Proxy on a free port of 127.0.0.1 that forwards to
// target. The caller must call Close.
func ListenProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("zktest: proxy listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{target: target, ln: ln, ctx: ctx, cancel: cancel, links: make(map[*link]struct{})}
	if ct := tlsOf(target); ct != nil { // to a TLS server: the proxy is one too (proxy_tls.go)
		if p.tls, err = newProxyTLS(ct); err != nil {
			_ = ln.Close()
			return nil, err
		}
		registerTLS(ct, p.Addr())
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the proxy's address ("127.0.0.1:port") for clients.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every current connection, both the client's and the server's
// side. The proxy keeps accepting and forwarding new connections, so clients
// reconnect at once (within their session, which survives).
func (p *Proxy) Cut() {
	for _, l := range p.snapshot(nil) {
		l.close()
	}
}

// Blackhole makes the network silently lose everything from now on: bytes
// already in flight are forwarded, but after that nothing passes in either
// direction on existing connections, and new connections are accepted but
// their bytes are read and discarded, never reaching the server. Nothing is
// closed, so neither side notices until its own timeouts fire; a session
// black-holed longer than its timeout expires on the server. Restore ends
// it.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = true
	for l := range p.links {
		l.blackholed = true
	}
}

// Restore ends a Blackhole. Connections that existed during the black-hole
// are closed (bytes were lost, so their streams are corrupt) and clients
// reconnect through the proxy, which forwards new connections normally.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.blackhole = false
	var bh []*link
	for l := range p.links {
		if l.blackholed {
			bh = append(bh, l)
		}
	}
	p.mu.Unlock()
	for _, l := range bh {
		l.close()
	}
}

// SetLatency delays every chunk of bytes by d in each direction (d one way,
// 2d a round trip), as a slow link would; 0 ends it. Order is kept. Bytes
// still on their way when a Blackhole begins are lost with the rest. A
// link keeps delaying its bytes (by the current latency) once it has begun
// to.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// CutAfterClientSends arms a one-shot fault: the next chunk of bytes a
// client sends that contains pattern (for example a znode path, which
// appears verbatim in ZooKeeper requests) is forwarded to the server, and
// then every connection is cut at once without forwarding any further byte
// from the server. The server still receives, and executes, the request,
// but the client never sees the reply: its request fails with a connection
// loss although it took effect. A pattern split across two reads of the
// client's connection is found too. Arming again replaces the pattern; an
// empty pattern matches the next chunk of any client.
func (p *Proxy) CutAfterClientSends(pattern []byte) {
	p.CutAfterClientSendsFunc(pattern, nil)
}

// CutAfterClientSendsFunc is CutAfterClientSends that also calls fn (when
// not nil) right after the matching request went to the server and before
// the connections are cut: pausing the server there, say, holds the
// request in a server that has not yet applied it.
func (p *Proxy) CutAfterClientSendsFunc(pattern []byte, fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = append([]byte{}, pattern...)
	p.onFire = fn
}

// Close stops accepting, closes every connection and waits for all of the
// proxy's goroutines to end. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	unregisterTLS(p.Addr())
	err := p.ln.Close()
	p.cancel()
	p.Cut()
	p.wg.Wait()
	return err
}

// snapshot returns the current links except skip.
func (p *Proxy) snapshot(skip *link) []*link {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*link, 0, len(p.links))
	for l := range p.links {
		if l != skip {
			out = append(out, l)
		}
	}
	return out
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (out of file descriptors and the like): back off.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		if p.tls != nil {
			c = tls.Server(c, p.tls.server)
		}
		l := &link{p: p, client: c, blackholed: p.blackhole}
		p.links[l] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		if l.blackholed {
			// Accepted during a black-hole: the server never hears of it.
			go l.discard()
		} else {
			go l.dial()
		}
	}
}

// discard reads and drops the client's bytes until the link is closed.
func (l *link) discard() {
	defer l.p.wg.Done()
	_, _ = io.Copy(io.Discard, l.client)
}

// dial connects to the target and starts forwarding in both directions. If
// the target refuses, the client's connection is closed, as it would be by
// a server that is down.
func (l *link) dial() {
	p := l.p
	defer p.wg.Done()
	s, err := p.dialTarget(l.client)
	p.mu.Lock()
	if err != nil || l.closed {
		p.mu.Unlock()
		if s != nil {
			s.Close()
		}
		l.close()
		return
	}
	l.server = s
	if p.blackhole {
		l.blackholed = true // the black-hole began while dialing
	}
	l.halves = 2
	p.wg.Add(2)
	p.mu.Unlock()
	go l.pipe(l.client, s, true)
	go l.pipe(s, l.client, false)
}

// pipe copies src to dst, applying the proxy's faults. up is true for the
// client->server direction.
func (l *link) pipe(src, dst net.Conn, up bool) {
	p := l.p
	defer p.wg.Done()
	var dl *delayLine // once latency was asked for
	defer func() { dl.flush() }()
	buf := make([]byte, proxyBufSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			data := buf[:n]
			p.mu.Lock()
			latency := p.latency
			drop := l.blackholed || l.closed || (!up && l.frozen)
			var (
				fire   bool
				onFire func()
			)
			if up {
				fire, onFire = l.matchLocked(data, drop)
			}
			p.mu.Unlock()
			if !drop && (latency > 0 || dl != nil) {
				if dl == nil {
					dl = newDelayLine(l, dst)
				}
				dl.push(data, time.Now().Add(latency))
			} else if !drop {
				if _, werr := dst.Write(data); werr != nil {
					p.mu.Lock()
					frozen := l.frozen
					p.mu.Unlock()
					if !frozen || up {
						l.close()
						return
					}
					// The client side was closed to lose a reply: keep
					// draining the server until it closes.
				}
			}
			if fire {
				if onFire != nil {
					onFire()
				}
				l.loseReply()
				return
			}
		}
		if err != nil {
			dl.flush() // what is on its way arrives before the end
			l.end(dst, err)
			return
		}
	}
}

// matchLocked looks for the armed pattern in the client's bytes, data
// joined to the tail of those before (a pattern split between two reads
// matches). On a match it disarms the proxy, freezes the link (from now
// on the server's bytes are lost) and returns the armed callback (fire).
// A chunk dropped, or no pattern armed, clears the tail. p.mu is held.
func (l *link) matchLocked(data []byte, drop bool) (fire bool, onFire func()) {
	p := l.p
	if drop || p.armed == nil {
		l.tail = nil
		return false, nil
	}
	joined := append(l.tail, data...)
	if bytes.Contains(joined, p.armed) {
		p.armed = nil
		onFire, p.onFire = p.onFire, nil
		l.frozen = true // from now on the server's bytes are lost
		l.tail = nil
		return true, onFire
	}
	if k := len(p.armed) - 1; k > 0 {
		if len(joined) > k {
			joined = joined[len(joined)-k:]
		}
		l.tail = append(l.tail[:0:0], joined...)
	} else {
		l.tail = nil
	}
	return false, nil
}

// end ends a direction whose src failed with err (io.EOF: closed): a
// black-holed link passes nothing on; a frozen link, an error, or the
// end of the last direction closes the link; any other end half-closes
// dst, and the other direction goes on.
func (l *link) end(dst net.Conn, err error) {
	p := l.p
	p.mu.Lock()
	blackholed, frozen := l.blackholed, l.frozen
	last := false
	if !blackholed && !frozen && errors.Is(err, io.EOF) {
		l.halves--
		last = l.halves == 0
	}
	p.mu.Unlock()
	switch {
	case blackholed:
		// Pass nothing on, not even the close: Restore or Close
		// closes the link.
	case frozen, !errors.Is(err, io.EOF), last:
		l.close()
	default:
		// Orderly end of this direction: pass the half-close on
		// and keep the other direction going.
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			l.close()
		}
	}
}

// loseReply is called right after the request that matched the armed
// pattern went to the server. It cuts every other link, closes this link's
// client side at once and half-closes its server side: the server reads the
// whole request (then EOF) and executes it, while whatever it answers is
// read and discarded until it closes, so that closing this socket with
// unread data never turns into a reset that could make the server drop the
// request.
func (l *link) loseReply() {
	p := l.p
	for _, o := range p.snapshot(l) {
		o.close()
	}
	l.client.Close()
	p.mu.Lock()
	s := l.server
	p.mu.Unlock()
	if cw, ok := s.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		_ = s.SetReadDeadline(time.Now().Add(drainTimeout))
		return // the server->client pipe drains, then closes the link
	}
	l.close()
}

// close closes both sides of the link and forgets it. It is idempotent.
func (l *link) close() {
	p := l.p
	p.mu.Lock()
	if l.closed {
		p.mu.Unlock()
		return
	}
	l.closed = true
	delete(p.links, l)
	s := l.server
	p.mu.Unlock()
	l.client.Close()
	if s != nil {
		s.Close()
	}
}

// delayLine delivers one direction's chunks after their due time, in order.
type delayLine struct {
	l    *link
	dst  net.Conn
	ch   chan delayed
	done chan struct{}
	once sync.Once
}

type delayed struct {
	data []byte
	due  time.Time
}

func newDelayLine(l *link, dst net.Conn) *delayLine {
	d := &delayLine{l: l, dst: dst, ch: make(chan delayed, 1024), done: make(chan struct{})}
	go d.run()
	return d
}

func (d *delayLine) push(data []byte, due time.Time) {
	d.ch <- delayed{data: append([]byte(nil), data...), due: due}
}

// flush waits until everything pushed is delivered or dropped; nil-safe
// and idempotent.
func (d *delayLine) flush() {
	if d == nil {
		return
	}
	d.once.Do(func() { close(d.ch) })
	<-d.done
}

func (d *delayLine) run() {
	defer close(d.done)
	p := d.l.p
	failed := false
	for c := range d.ch {
		if failed {
			continue
		}
		time.Sleep(time.Until(c.due))
		p.mu.Lock()
		drop := d.l.blackholed || d.l.closed
		p.mu.Unlock()
		if drop {
			continue
		}
		if _, err := d.dst.Write(c.data); err != nil {
			failed = true
			d.l.close()
		}
	}
}
