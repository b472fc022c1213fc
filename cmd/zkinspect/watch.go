package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// retryAfter is how long -watch waits before reading again after an error
// that left no watch behind (a connection problem, say).
const retryAfter = time.Second

// watchLoop redraws the report every time a watched node or list changes,
// until ctx ends (ctrl-C). Every read of an inspection leaves a watch:
// the children of each queue, the data of each node, the existence of a
// missing path. It returns nil when ctx ends.
func watchLoop(ctx context.Context, c *recipes.Client, cfg config, w io.Writer) error {
	states, unsubscribe := c.Subscribe()
	defer unsubscribe()
	clearScreen := !cfg.json && isTerminal(w)
	ws := newWatchSet()
	for {
		r := &reader{c: c, watches: ws}
		rctx, cancel := context.WithTimeout(ctx, cfg.timeout)
		rep, err := inspect(rctx, r, cfg)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err := draw(w, rep, err, cfg, clearScreen); err != nil {
			return err
		}
		cases := []reflect.SelectCase{
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(states)},
		}
		keys := make([]watchKey, 0, len(ws.pending))
		for k, ch := range ws.pending {
			keys = append(keys, k)
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
		}
		var t *time.Timer
		if err != nil && !errors.Is(err, errNoNode) || len(ws.pending) == 0 {
			t = time.NewTimer(retryAfter)
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)})
		}
		chosen, _, ok := reflect.Select(cases)
		if t != nil {
			t.Stop()
		}
		switch {
		case chosen == 0:
			return nil
		case chosen == 1 && !ok:
			return fmt.Errorf("watch %s: %w", cfg.path, recipes.ErrClosed)
		case chosen >= 2 && chosen-2 < len(keys):
			delete(ws.pending, keys[chosen-2]) // a watch fires once
		}
		// Forget every other watch that fired too (all of them, when the
		// session expired), so that one redraw covers them.
		for i, k := range keys {
			if i == chosen-2 {
				continue
			}
			select {
			case <-ws.pending[k]:
				delete(ws.pending, k)
			default:
			}
		}
	}
}

// draw prints one redraw: the report, or the error that replaced it.
func draw(w io.Writer, rep *Report, err error, cfg config, clearScreen bool) error {
	now := time.Now()
	if cfg.json {
		if err != nil {
			return writeJSON(w, struct {
				Path  string `json:"path"`
				Error string `json:"error"`
			}{cfg.path, err.Error()}, true)
		}
		return render(w, rep, true, true)
	}
	head := fmt.Sprintf("=== %s: zkinspect -watch %s (ctrl-C to stop)\n", now.Format("15:04:05.000"), cfg.path)
	if clearScreen {
		head = "\x1b[H\x1b[2J" + head
	}
	if _, werr := io.WriteString(w, head); werr != nil {
		return werr
	}
	if err != nil {
		msg := fmt.Sprintf("error: %v\n", err)
		if errors.Is(err, errNoNode) {
			msg = fmt.Sprintf("%s: no such node (waiting for it to appear)\n", cfg.path)
		}
		_, werr := io.WriteString(w, msg)
		return werr
	}
	return render(w, rep, false, false)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
