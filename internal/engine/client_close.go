package engine

// How a Client closes: its session ended, its goroutines stopped.

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Close ends the session and stops every goroutine the client started. It
// asks the server to close the session, so that its ephemeral nodes go at
// once, and waits for the reply until ctx ends (go-zookeeper itself waits
// at most 1s). When ctx ends first the connection is cut instead, the
// server expires the session after its timeout, and the error wraps
// ctx.Err(); go-zookeeper's Close then gives up on its reply within a
// second, in the background. Every other goroutine of the client has ended
// when Close returns. It is safe to call more than once; later calls
// return nil.
func (c *Client) Close(ctx context.Context) error {
	if c.unmade() {
		return zkerr.ErrNilClient
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	var err error
	c.closeOnce.Do(func() { err = c.shutdown(ctx) })
	return err
}

// shutdown closes the client. A nil ctx cuts the connection at once.
func (c *Client) shutdown(ctx context.Context) error {
	c.sm.mu.Lock()
	c.sm.closed = true
	close(c.closeCh)
	closeIfOpen(c.sm.suspendCh)
	closeIfOpen(c.sm.lostCh)
	closeIfOpen(c.sm.changeCh)
	if c.sm.timer != nil {
		c.sm.timer.Stop()
	}
	c.sm.mu.Unlock()
	c.sm.listeners.Close()
	c.pw.closeWatches()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		c.conn.Close() // tells go-zookeeper to quit, then sends the close request
	}()
	var err error
	abort := ctx == nil
	if !abort {
		select {
		case <-closed:
		case <-ctx.Done():
			abort = true
			err = fmt.Errorf("zkrecipes: close: the session was not closed on the server, which expires it after its timeout: %w", ctx.Err())
		}
	}
	if abort {
		if c.wire != nil {
			// go-zookeeper's loops end with the connection. Its Close
			// still waits out its own 1s for a reply to the close request
			// it could not send, then returns: the one goroutine a Close
			// cut short leaves behind, for at most that second.
			c.wire.stop()
		} else {
			<-closed // go-zookeeper's own limits: 1s (2s to queue the request)
		}
	}
	// go-zookeeper closes its event channel once its loop has ended.
	select {
	case <-c.pumpDone:
	case <-time.After(10 * time.Second):
		c.log.Warn("zkrecipes: go-zookeeper did not stop within 10s")
	}
	c.inbox.Close()
	c.wg.Wait()
	return err
}

func closeIfOpen(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}
