package main

// The scale scenario's cache row and its table (see scale.go).

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// cacheRows runs the cache row at every factor: ours and Curator's
// CuratorCache, both in -scale-heap MiB.
func (s *scaleRun) cacheRows() error {
	b := s.b
	jvm := []string{"-Xmx" + strconv.Itoa(scaleHeapMB) + "m", "-XX:+ExitOnOutOfMemoryError"}
	cs, err := b.startCacheSides(s.ctx, jvm)
	defer cs.close()
	if err != nil {
		return err
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(scaleHeapMB) << 20))
	loaded, failed := 0, 0 // leaves: the largest tree Curator loaded, the first it could not
	for _, f := range s.factors {
		n := scaleLeaves * f
		tree, err := b.makeCacheTree(s.ctx, cs.admin, n)
		if err != nil {
			return err
		}
		res, err := b.cacheSize(s.ctx, cs, tree, cacheOpts{rounds: s.roundsAt(f), loadOnly: true, curMayFail: true})
		tree.remove(s.ctx, cs.admin)
		if err != nil {
			return fmt.Errorf("cache at %dx: %w", f, err)
		}
		s.lines = append(s.lines, res.line)
		s.cacheFigs(res, f, n, cs.cur != nil)
		switch {
		case res.curErr != nil:
			fmt.Printf("   Curator's cache did not load %d leaves in %d MiB: %v\n", n, scaleHeapMB, res.curErr)
			cs.cur, cs.curNote = nil, fmt.Sprintf("fails in %d MiB", scaleHeapMB)
			failed = n
		case cs.cur != nil:
			loaded = n
		}
	}
	if failed == 0 || loaded == 0 {
		return nil
	}
	lo, hi, err := s.curatorLargest(cs, jvm, loaded, failed)
	if err != nil {
		return err
	}
	fmt.Printf("   Curator's CuratorCache in %d MiB: loads %d leaves, not %d\n", scaleHeapMB, lo, hi)
	s.lines = append(s.lines, fmt.Sprintf("RESULT scenario=scale row=cache measure=curator-largest heap_mib=%d loads_leaves=%d fails_leaves=%d", scaleHeapMB, lo, hi))
	s.largest = fmt.Sprintf("Curator's CuratorCache in %d MiB loads %d leaves and not %d (ours loads every size in the same memory limit)", scaleHeapMB, lo, hi)
	return nil
}

// cacheFigs records one factor's cache figures: time to "initialized",
// heap bytes per node (the rounds after the first, as cacheSize's), client
// CPU per node.
func (s *scaleRun) cacheFigs(res cacheResult, f, n int, curOK bool) {
	type get func(cacheFigs) float64
	med := func(figs []cacheFigs, g get, skipFirst bool) float64 {
		if skipFirst && len(figs) > 1 {
			figs = figs[1:]
		}
		var xs []float64
		for _, c := range figs {
			xs = append(xs, g(c))
		}
		return median(xs)
	}
	cpu := func(c cacheFigs) float64 { return c.cpuLoad }
	for _, m := range []struct {
		name, unit string
		g          get
		skipFirst  bool
	}{
		{"load, time to initialized", "ms", func(c cacheFigs) float64 { return msf(c.load) }, false},
		{"heap bytes per node", "B", func(c cacheFigs) float64 { return c.heap }, true},
	} {
		perOp := m.unit == "B"
		s.set("cache", m.name, m.unit, perOp, "µs/node", f, n, "ours", scaleFig{v: med(res.ours, m.g, m.skipFirst), cpu: med(res.ours, cpu, false)})
		fg := scaleFig{note: cacheCurNote(res, curOK), cpu: -1}
		if fg.note == "" {
			fg = scaleFig{v: med(res.curs, m.g, m.skipFirst), cpu: med(res.curs, cpu, false)}
		}
		s.set("cache", m.name, m.unit, perOp, "µs/node", f, n, "curator", fg)
	}
}

// cacheCurNote says why Curator has no cache figure, or "".
func cacheCurNote(res cacheResult, curOK bool) string {
	switch {
	case res.curErr != nil:
		return fmt.Sprintf("fails in %d MiB", scaleHeapMB)
	case !curOK || len(res.curs) == 0:
		return "not run"
	}
	for _, c := range res.curs {
		if c.size < 0 {
			return fmt.Sprintf("fails in %d MiB", scaleHeapMB)
		}
	}
	return ""
}

// curatorLargest searches between lo leaves, which Curator's cache loaded
// in the heap, and hi, which it did not, halving -scale-probes times, a
// tree of its own and a new Curator process each time.
func (s *scaleRun) curatorLargest(cs *cacheSides, jvm []string, lo, hi int) (int, int, error) {
	for range scaleProbes {
		mid := (lo + hi) / 2 / 100 * 100
		if mid <= lo || mid >= hi {
			break
		}
		if cs.cur == nil {
			if err := cs.startCurator(s.b, jvm); err != nil {
				return lo, hi, err
			}
		}
		tree, err := s.b.makeCacheTree(s.ctx, cs.admin, mid)
		if err != nil {
			return lo, hi, err
		}
		a, err := cs.cur.do(6*time.Minute+time.Duration(tree.total)*time.Millisecond/2, "cacheload %s", tree.root)
		tree.remove(s.ctx, cs.admin)
		if err == nil && a.ops >= tree.total {
			fmt.Printf("   Curator's cache loaded %d leaves in %d MiB (%.0f ms)\n", mid, scaleHeapMB, a.seconds*1e3)
			lo = mid
			continue
		}
		fmt.Printf("   Curator's cache did not load %d leaves in %d MiB: %v\n", mid, scaleHeapMB, err)
		hi, cs.cur = mid, nil
	}
	return lo, hi, nil
}

// print prints the scale table and adds a RESULT line per measure.
func (s *scaleRun) print() {
	first, last := s.factors[0], s.factors[len(s.factors)-1]
	fmt.Printf("\n-- scale: each measure at %v times its 1x size; growth = the value at %dx over the value at 1x (linear: %d for a total, 1 per operation; '!' past 1.5 times linear)\n", s.factors, last, last)
	tw := table("row", "measure", "sizes", "ours", "growth", "Curator", "growth", "ours CPU", "Curator CPU", "CPU unit")
	for _, m := range s.measures {
		linear := float64(last)
		if m.perOp {
			linear = 1
		}
		var sizes []string
		for _, f := range s.factors {
			sizes = append(sizes, strconv.Itoa(m.sizes[f]))
		}
		vals := func(side string, cpu bool) string {
			var xs []string
			for _, f := range s.factors {
				fg := m.figs[f][side]
				switch {
				case fg.note != "" && !cpu:
					xs = append(xs, fg.note)
				case cpu && (fg.cpu < 0 || fg.note != ""):
					xs = append(xs, "–")
				case cpu:
					xs = append(xs, fmtScale(fg.cpu))
				default:
					xs = append(xs, fmtScale(fg.v))
				}
			}
			return strings.Join(xs, " → ")
		}
		growth := func(side string) (float64, string) {
			a, z := m.figs[first][side], m.figs[last][side]
			if a.note != "" || z.note != "" || a.v <= 0 {
				return math.NaN(), "–"
			}
			g := z.v / a.v
			mark := ""
			if g > 1.5*linear {
				mark = " !"
			}
			return g, fmt.Sprintf("%.2f%s", g, mark)
		}
		gOurs, gos := growth("ours")
		gc, gcs := growth("curator")
		fmt.Fprintf(tw, "%s\t%s (%s)\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.row, m.name, m.unit, strings.Join(sizes, " → "),
			vals("ours", false), gos, vals("curator", false), gcs, vals("ours", true), vals("curator", true), m.cpuUnit)
		s.lines = append(s.lines, fmt.Sprintf("RESULT scenario=scale row=%s measure=%s unit=%s sizes=%s ours=%s curator=%s growth_ours=%.3f growth_curator=%.3f linear=%.0f cpu_ours=%s cpu_curator=%s",
			m.row, scaleKey(m.name), scaleKey(m.unit), strings.Join(sizes, ","), scaleKey(vals("ours", false)), scaleKey(vals("curator", false)), gOurs, gc, linear,
			scaleKey(vals("ours", true)), scaleKey(vals("curator", true))))
	}
	tw.Flush()
	if s.largest != "" {
		fmt.Println(s.largest)
	}
}

// fmtScale formats a figure with about three significant digits.
func fmtScale(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// scaleKey makes s a RESULT value: a list's " → " as commas, no spaces
// (dashes), no commas or quotes within an item.
func scaleKey(s string) string {
	parts := strings.Split(s, " → ")
	for i, p := range parts {
		parts[i] = strings.Map(func(r rune) rune {
			switch r {
			case ' ', ':', '+', '–':
				return '-'
			case '\'', ',':
				return -1
			case 'µ':
				return 'u'
			}
			return r
		}, p)
	}
	return strings.Join(parts, ",")
}
