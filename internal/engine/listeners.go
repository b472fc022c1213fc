package engine

import (
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// Listen registers fn to be called with the current state (unless the
// client is still LATENT), then with every state transition, in order, on
// a goroutine of its own: a slow fn delays only its own later calls, never
// the client. The returned function removes the listener; it, and Close,
// wait up to 5s for a call in progress to return.
func (c *Client) Listen(fn func(zkstate.State)) (remove func()) {
	if fn == nil || c.unmade() {
		return func() {}
	}
	c.sm.mu.Lock() // states are posted under c.sm.mu: nothing comes between
	defer c.sm.mu.Unlock()
	if c.sm.state == zkstate.StateLatent {
		return c.sm.listeners.Listen(fn)
	}
	return c.sm.listeners.ListenFirst(fn, c.sm.state)
}

// SubscribeStates returns a channel that receives the current state
// (unless the client is still LATENT), then every state transition, in
// order, each converted by conv (to package recipes' State), without a
// goroutine of its own. The current state is queued under c.sm.mu, so
// that no transition comes between the two. Transitions queue without
// bound while the reader is slow. The channel is closed by the returned
// function or when the client closes.
func SubscribeStates[T any](c *Client, conv func(zkstate.State) T) (<-chan T, func()) {
	if c.unmade() {
		ch := make(chan T)
		close(ch)
		return ch, func() {}
	}
	c.sm.mu.Lock()
	defer c.sm.mu.Unlock()
	var first *zkstate.State
	if s := c.sm.state; s != zkstate.StateLatent {
		first = &s
	}
	return notify.SubscribeVia(&c.sm.listeners, first, conv)
}
