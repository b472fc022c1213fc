package sasl_test

// A zk.Dialer that wraps each connection in a sasl.Conn, which runs the
// SASL exchange right after the session handshake, before go-zookeeper
// sees the ConnectResponse, so none of go-zookeeper's requests (re-auth,
// setWatches, the caller's) can go out before it: what the engine's Wire
// is to do (docs/security.md).

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/sasl"
)

// saslDialer dials and authenticates each connection with a new mechanism.
type saslDialer struct {
	mech      func() sasl.Mechanism
	firstOnly bool // authenticate the first connection only (to show why every one must be)

	mu        sync.Mutex
	exchanges int     // successful exchanges
	errs      []error // failed ones
	changed   chan struct{}
}

func newSASLDialer(mech func() sasl.Mechanism) *saslDialer {
	return &saslDialer{mech: mech, changed: make(chan struct{}, 1)}
}

func (d *saslDialer) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	skip := d.firstOnly && d.exchanges > 0
	d.mu.Unlock()
	if skip {
		return c, nil
	}
	return sasl.NewConn(c, d.mech(), 10*time.Second, d.record), nil
}

func (d *saslDialer) record(err error) {
	d.mu.Lock()
	if err == nil {
		d.exchanges++
	} else {
		d.errs = append(d.errs, err)
	}
	d.mu.Unlock()
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

func (d *saslDialer) counts() (int, []error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.exchanges, append([]error(nil), d.errs...)
}

var errTimeout = errors.New("timed out")

// wait waits until cond holds on the dialer's counts.
func (d *saslDialer) wait(timeout time.Duration, cond func(ok int, errs []error) bool) error {
	deadline := time.After(timeout)
	for {
		if cond(d.counts()) {
			return nil
		}
		select {
		case <-d.changed:
		case <-deadline:
			return errTimeout
		}
	}
}
