package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// maxListed is how many nodes -watch lists when it starts on a data
// subtree; the count says how many more there are.
const maxListed = 100

// plainData reports whether cfg.path is a plain data subtree: a data node,
// or a parent whose summary finds data nodes and no recipe's queue (empty
// leaves aside). -watch follows such a subtree through a cache and prints
// each change, instead of redrawing a report. -summary, a missing path, or
// a failed inspection keep the redraws.
func plainData(ctx context.Context, c *recipes.Client, cfg config) bool {
	if cfg.summary {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	rep, err := inspect(rctx, &reader{c: c}, cfg)
	if err != nil {
		return false
	}
	switch rep.Mode {
	case "queue":
		return rep.Queue != nil && rep.Queue.Kind == kindData
	case "summary":
		if rep.DataNodes == 0 || len(rep.Skipped) > 0 {
			return false
		}
		for _, l := range rep.Locks {
			if l.Kind != kindEmpty && !isDataKind(l.Kind) {
				return false
			}
		}
		return true
	}
	return false
}

// DataEvent is one line of -watch on a data subtree: a node created,
// changed or deleted, "initialized" once the first full read is listed,
// "resynced" after a reconnection's full read was merged (the changes it
// found are listed before it).
type DataEvent struct {
	Time       time.Time `json:"time"`
	Event      string    `json:"event"` // created, changed, deleted, initialized, resynced
	Path       string    `json:"path,omitempty"`
	Version    *int32    `json:"version,omitempty"`     // the new node's; the old one's for deleted
	OldVersion *int32    `json:"old_version,omitempty"` // changed: the version before
	Data       *string   `json:"data,omitempty"`        // the new data, when it is UTF-8
	DataBase64 string    `json:"data_base64,omitempty"` // the new data, when it is not
	DataLen    *int      `json:"data_len,omitempty"`
	Nodes      *int      `json:"nodes,omitempty"` // initialized, resynced: how many nodes the cache holds
}

// watchData follows cfg.path's subtree through a cache (package cache:
// one persistent recursive watch, resynced after every reconnection) and
// prints every change as it happens until ctx ends: first the nodes there
// are (created, up to maxListed of them in text), then "initialized", then
// each create, change and delete in the order the server applied them.
// With -json each is one DataEvent per line.
func watchData(ctx context.Context, c *recipes.Client, cfg config, w io.Writer) error {
	cc, err := cache.New(c, cfg.path)
	if err != nil {
		return err
	}
	var (
		mu      sync.Mutex
		werr    error
		listed  int
		initial = true
		failed  = make(chan struct{})
	)
	if !cfg.json {
		if _, err := fmt.Fprintf(w, "=== %s: zkinspect -watch %s: a data subtree, followed through a cache (ctrl-C to stop)\n",
			time.Now().Format("15:04:05.000"), cfg.path); err != nil {
			return err
		}
	}
	remove := cc.Listen(func(ev cache.Event) {
		mu.Lock()
		defer mu.Unlock()
		if werr != nil {
			return
		}
		if ev.Type == cache.Initialized {
			if initial && listed > maxListed && !cfg.json {
				if _, werr = fmt.Fprintf(w, "  ... and %d more nodes\n", listed-maxListed); werr != nil {
					close(failed)
					return
				}
			}
			initial = false
		}
		if initial && ev.Type == cache.NodeCreated {
			listed++
			if listed > maxListed && !cfg.json {
				return
			}
		}
		if werr = writeDataEvent(w, cfg.json, dataEvent(ev, time.Now(), cc.Size())); werr != nil {
			close(failed)
		}
	})
	defer remove()
	if err := cc.Start(ctx); err != nil {
		return fmt.Errorf("watch %s: %w", cfg.path, err)
	}
	select {
	case <-ctx.Done():
	case <-failed:
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = cc.Close(cctx)
	mu.Lock()
	defer mu.Unlock()
	return werr
}

func dataEvent(ev cache.Event, now time.Time, size int) DataEvent {
	de := DataEvent{Time: now}
	node := ev.New
	switch ev.Type {
	case cache.NodeCreated:
		de.Event = "created"
	case cache.NodeChanged:
		de.Event = "changed"
		v := ev.Old.Stat.Version
		de.OldVersion = &v
	case cache.NodeDeleted:
		de.Event = "deleted"
		node = ev.Old
	case cache.Initialized, cache.Resynced:
		de.Event = "initialized"
		if ev.Type == cache.Resynced {
			de.Event = "resynced"
		}
		de.Nodes = &size
		return de
	}
	if node == nil {
		return de
	}
	de.Path = node.Path
	v := node.Stat.Version
	de.Version = &v
	if ev.Type != cache.NodeDeleted {
		n := len(node.Data)
		de.DataLen = &n
		if utf8.Valid(node.Data) {
			s := string(node.Data)
			de.Data = &s
		} else {
			de.DataBase64 = base64.StdEncoding.EncodeToString(node.Data)
		}
	}
	return de
}

// writeDataEvent prints one event: a JSON line, or
// "15:04:05.000 changed /cfg/a v2 (was v1) 5 bytes "hello"".
func writeDataEvent(w io.Writer, asJSON bool, de DataEvent) error {
	if asJSON {
		return writeJSON(w, de, true)
	}
	line := de.Time.Format("15:04:05.000") + " " + de.Event
	if de.Path != "" {
		line += " " + de.Path
	}
	if de.Version != nil {
		line += " v" + strconv.Itoa(int(*de.Version))
	}
	if de.OldVersion != nil {
		line += " (was v" + strconv.Itoa(int(*de.OldVersion)) + ")"
	}
	if de.DataLen != nil {
		line += fmt.Sprintf(" %d bytes", *de.DataLen)
		switch {
		case de.Data != nil && *de.DataLen > 0:
			s := *de.Data
			if r := []rune(s); len(r) > 60 {
				s = string(r[:57]) + "..."
			}
			line += " " + strconv.Quote(s)
		case de.DataBase64 != "":
			line += " (binary)"
		}
	}
	if de.Nodes != nil {
		line += fmt.Sprintf(" (%d nodes)", *de.Nodes)
	}
	_, err := io.WriteString(w, line+"\n")
	return err
}
