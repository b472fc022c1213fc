package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// watchLoop redraws the report every time a watched node or list changes,
// until ctx ends (ctrl-C). Each redraw is one read of the client's Follow:
// every read of an inspection leaves a watch (the children of each queue,
// the data of each node, the existence of a missing path) unless one is
// still armed there, and Follow reads again when one fires, after a
// reconnection, and after a failed inspection (drawn, then retried with
// backoff). It returns nil when ctx ends. On a plain data subtree (see
// plainData) it prints each change instead, through a cache (watchData).
func watchLoop(ctx context.Context, c *recipes.Client, cfg config, w io.Writer) error {
	if plainData(ctx, c, cfg) {
		return watchData(ctx, c, cfg, w)
	}
	clearScreen := redraws(w, cfg.json)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var drawErr error
	what := "zkinspect -watch " + cfg.path
	f := (*engine.Client)(c).NewFollower(what, nil)
	f.Add(what, func(ctx context.Context, ws *engine.Watches) error {
		rctx, cancel := context.WithTimeout(ctx, cfg.timeout)
		rep, err := inspect(rctx, &reader{c: c, watches: ws}, cfg)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if drawErr = draw(w, rep, err, cfg, clearScreen); drawErr != nil {
			stop() // the output is gone: nothing more to draw on
			return nil
		}
		if errors.Is(err, errNoNode) {
			return nil // its exists watch redraws when it appears
		}
		return err
	})
	err := f.Run(ctx)
	switch {
	case drawErr != nil:
		return drawErr
	case err != nil:
		return fmt.Errorf("watch %s: %w", cfg.path, err)
	}
	return nil
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

// redraws reports whether -watch clears the screen and homes the cursor
// before each draw, so the screen shows the latest one only: when w is a
// terminal and the output is text. Piped or redirected (and with -json) it
// appends each draw instead.
func redraws(w io.Writer, asJSON bool) bool { return !asJSON && isTerminal(w) }

// isTerminal reports whether w is a terminal: a file that is a character
// device (golang.org/x/term is not a dependency of this module).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && isCharDevice(st.Mode())
}

func isCharDevice(m os.FileMode) bool { return m&os.ModeCharDevice != 0 }
