package main

// The scale scenario (issue 36, "ten times the scale, measured beside
// Curator"): four rows of the peers and cache scenarios run at each of
// -scale-factors times their 1x size (1 and 10 by default), ours and
// Curator's in the same run, each row's sides interleaved in rounds as the
// peer rows are (the side that goes first rotates), the 1x size and the
// larger ones of a row one after the other:
//
//   - discovery, -scale-instances (1,000) instances of one service:
//     registering them one after another (discRegister); a provider's start
//     until it holds them all and getInstance among them (discGetInstance);
//     a new instance reaching 10 service caches of the service
//     (discSee).
//   - group, -scale-members (100) GroupMembers over the peers' sessions:
//     time to agreement after they all join (groupJoin); time from one
//     member's expiry to every other member dropping it (groupExpiry).
//   - cache, -scale-leaves (100,000) leaves under fan-out 100: time to
//     "initialized" and heap bytes per node (cacheSize with the load
//     alone). Both sides get the same heap, -scale-heap MiB: Curator's JVM
//     as -Xmx (and dies on OutOfMemoryError), this process as its memory
//     limit (debug.SetMemoryLimit). Where Curator cannot load a size in it,
//     its largest size is searched for between the last size it loaded
//     and that one (-scale-probes halvings, a tree each).
//   - waiters, -scale-waiters (1,000) waiters on one lock over -sessions
//     sessions: time, client CPU and server packets (pings included) per
//     hand-off as they drain (queueRow).
//
// Each row's figures go to one table: the value at each factor, ours and
// Curator's, the growth (the largest factor's value over the 1x one:
// linear is the factor for a total, 1 for a figure per operation) and
// client CPU per operation beside. The 1x rounds are -rounds, the larger
// factors' -scale-rounds. The peers' Curator gets -scale-peer-heap MiB,
// the local server -scale-server-heap MiB (a million nodes).

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
)

var (
	scaleFactors    string
	scaleRounds     int
	scaleInstances  int
	scaleMembers    int
	scaleLeaves     int
	scaleWaiters    int
	scaleHeapMB     int
	scalePeerHeapMB int
	scaleServerMB   int
	scaleProbes     int
	scaleRowsFlag   string
)

func init() {
	scenarios = append(scenarios, "scale")
	notInAll["scale"] = true
	flag.StringVar(&scaleFactors, "scale-factors", "1,10", "scale: the multiples of each row's 1x size to run, beginning with 1 (\"1,2\" for a quick run)")
	flag.IntVar(&scaleRounds, "scale-rounds", 1, "scale: rounds at the factors above 1 (1x runs -rounds)")
	flag.IntVar(&scaleInstances, "scale-instances", 1000, "scale: instances of the service at 1x (discovery rows)")
	flag.IntVar(&scaleMembers, "scale-members", 100, "scale: group members at 1x")
	flag.IntVar(&scaleLeaves, "scale-leaves", 100000, "scale: leaves of the cached tree at 1x (fan-out 100, 100-byte values)")
	flag.IntVar(&scaleWaiters, "scale-waiters", 1000, "scale: waiters on one lock at 1x")
	flag.IntVar(&scaleHeapMB, "scale-heap", 512, "scale: the heap of both cache sides, MiB (Curator's -Xmx; this process's memory limit during the cache row)")
	flag.IntVar(&scalePeerHeapMB, "scale-peer-heap", 4096, "scale: the -Xmx of the Curator process of the discovery, group and waiter rows, MiB")
	flag.IntVar(&scaleServerMB, "scale-server-heap", 4096, "scale: the -Xmx of the local ZooKeeper server, MiB, when the benchmark starts one")
	flag.StringVar(&scaleRowsFlag, "scale-rows", "discovery,group,cache,waiters", "scale: the rows to run, a comma-separated list of discovery, group, cache, waiters")
	flag.IntVar(&scaleProbes, "scale-probes", 2, "scale: halvings of the search for the largest tree Curator's cache loads in -scale-heap, when it cannot load one of the sizes")
}

// scaleFig is one side's figure of one measure at one factor.
type scaleFig struct {
	v, cpu float64 // cpu: client µs per operation; < 0: none
	note   string  // instead of v: why there is none ("fails", ...)
}

// scaleMeasure is one line of the scale table.
type scaleMeasure struct {
	row, name, unit string
	perOp           bool // linear growth is 1 (else the factor)
	cpuUnit         string
	figs            map[int]map[string]scaleFig // factor -> side -> figure
	sizes           map[int]int                 // factor -> the row's size
}

// scaleRun is the scale scenario's state.
type scaleRun struct {
	b        *bench
	ctx      context.Context
	factors  []int
	measures []*scaleMeasure
	byName   map[string]*scaleMeasure
	lines    []string
	largest  string          // the cache row's search for Curator's largest load
	rows     map[string]bool // -scale-rows
}

// set records a figure.
func (s *scaleRun) set(row, name, unit string, perOp bool, cpuUnit string, f, size int, side string, fig scaleFig) {
	m := s.byName[row+"/"+name]
	if m == nil {
		m = &scaleMeasure{row: row, name: name, unit: unit, perOp: perOp, cpuUnit: cpuUnit, figs: map[int]map[string]scaleFig{}, sizes: map[int]int{}}
		s.byName[row+"/"+name] = m
		s.measures = append(s.measures, m)
	}
	if m.figs[f] == nil {
		m.figs[f] = map[string]scaleFig{}
	}
	m.figs[f][side], m.sizes[f] = fig, size
}

// parseScaleFactors reads -scale-factors.
func parseScaleFactors() ([]int, error) {
	var fs []int
	for _, x := range strings.Split(scaleFactors, ",") {
		f, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || f < 1 || len(fs) == 0 && f != 1 || len(fs) > 0 && f <= fs[len(fs)-1] {
			return nil, fmt.Errorf("-scale-factors: %q: want increasing multiples beginning with 1", scaleFactors)
		}
		fs = append(fs, f)
	}
	if len(fs) < 2 {
		return nil, fmt.Errorf("-scale-factors: %q: want at least 1 and one more", scaleFactors)
	}
	return fs, nil
}

// scaleScenario runs the scale scenario (see the top of the file).
func (b *bench) scaleScenario(ctx context.Context) (string, bool, error) {
	factors, err := parseScaleFactors()
	if err != nil {
		return "", false, err
	}
	fmt.Printf("\n== scale: discovery (%d instances), group (%d members), cache (%d leaves), waiters on one lock (%d) at %v times, ours and Curator's in the same rounds\n",
		scaleInstances, scaleMembers, scaleLeaves, scaleWaiters, factors)
	s := &scaleRun{b: b, ctx: ctx, factors: factors, byName: map[string]*scaleMeasure{}, rows: map[string]bool{}}
	for _, r := range strings.Split(scaleRowsFlag, ",") {
		switch r = strings.TrimSpace(r); r {
		case "discovery", "group", "cache", "waiters":
			s.rows[r] = true
		default:
			return "", false, fmt.Errorf("-scale-rows: %q is not one of discovery, group, cache, waiters", r)
		}
	}
	if err := s.peerRows(); err != nil {
		return "", false, err
	}
	if s.rows["cache"] {
		if err := s.cacheRows(); err != nil {
			return "", false, err
		}
	}
	s.print()
	return strings.Join(s.lines, "\n"), true, nil
}

// roundsAt is the rounds at factor f.
func (s *scaleRun) roundsAt(f int) int {
	if f == 1 {
		return s.b.f.rounds
	}
	return scaleRounds
}

// peerRows runs the discovery, group and waiter rows on one Curator
// process (its heap -scale-peer-heap) and the peers' sessions.
func (s *scaleRun) peerRows() error {
	if !s.rows["discovery"] && !s.rows["group"] && !s.rows["waiters"] {
		return nil
	}
	var keys []string // -peers=false: ours alone
	if peersOn {
		keys = []string{"curator"}
	}
	w, stop, err := s.b.startPeers(s.ctx, keys, []string{"-Xmx" + strconv.Itoa(scalePeerHeapMB) + "m"})
	defer stop()
	if err != nil {
		return err
	}
	if len(w.clients) < discReaders {
		return fmt.Errorf("scale needs %d sessions, -sessions and -readers give %d", discReaders, len(w.clients))
	}
	for _, row := range []struct {
		name string
		run  func(*peerWork, int) error
	}{{"discovery", s.discoveryRow}, {"group", s.groupRow}, {"waiters", s.waitersRow}} {
		for _, f := range s.factors {
			if !s.rows[row.name] {
				break
			}
			w.nRound = s.roundsAt(f)
			if err := row.run(w, f); err != nil {
				return fmt.Errorf("at %dx: %w", f, err)
			}
		}
	}
	return nil
}

// peerFigs records the last compared row's medians (the peer rows'
// compare) as a measure: value from rate, CPU per op.
func (s *scaleRun) peerFigs(row, name, unit string, perOp bool, cpuUnit string, f, size int, value func(rate float64) float64) {
	r := peerRows[len(peerRows)-1]
	for _, side := range []string{"ours", "curator"} {
		rate, ok := r.rate[side]
		if !ok {
			s.set(row, name, unit, perOp, cpuUnit, f, size, side, scaleFig{note: "not run", cpu: -1})
			continue
		}
		s.set(row, name, unit, perOp, cpuUnit, f, size, side, scaleFig{v: value(rate), cpu: r.cpu[side]})
	}
}

// noted records a figure a row noted (peerWork.note), without CPU.
func (s *scaleRun) noted(w *peerWork, key, fig, row, name, unit string, perOp bool, f, size int) {
	for _, side := range []string{"ours", "curator"} {
		v, ok := w.notes[key][side+"/"+fig]
		fg := scaleFig{v: v, cpu: -1}
		if !ok {
			fg.note = "not run"
		}
		s.set(row, name, unit, perOp, "", f, size, side, fg)
	}
}

func msOfRate(rate float64) float64 { return 1e3 / rate }

// discoveryRow is the discovery row at factor f.
func (s *scaleRun) discoveryRow(w *peerWork, f int) error {
	n := scaleInstances * f
	line, err := w.discRegister(n)
	if err != nil {
		return err
	}
	s.lines = append(s.lines, line)
	s.peerFigs("discovery", "register all instances, one after another", "ms", false, "µs/registration", f, n, msOfRate)
	if line, err = w.discGetInstance(n); err != nil {
		return err
	}
	s.lines = append(s.lines, line)
	key := fmt.Sprintf("discovery-getinstance-%d", n)
	s.noted(w, key, "start_ms", "discovery", "provider start until it holds all", "ms", false, f, n)
	s.noted(w, key, "ns", "discovery", "getInstance", "ns/call", true, f, n)
	if line, err = w.discSee(n); err != nil {
		return err
	}
	s.lines = append(s.lines, line)
	s.peerFigs("discovery", "a new instance reaches 10 caches", "ms", true, "µs/instance added+removed", f, n, msOfRate)
	return nil
}

// groupRow is the group row at factor f: join, then an expiry.
func (s *scaleRun) groupRow(w *peerWork, f int) error {
	n := scaleMembers * f
	line, err := w.groupJoin(n)
	if err != nil {
		return err
	}
	s.lines = append(s.lines, line)
	s.peerFigs("group", "all join, time to agreement", "ms", false, "µs/member", f, n, msOfRate)
	if line, err = w.groupExpiry(n); err != nil {
		return err
	}
	s.lines = append(s.lines, line)
	s.peerFigs("group", "a member's expiry reaches all", "ms", false, "µs/member", f, n, msOfRate)
	return nil
}

// waitersRow is the waiters row at factor f.
func (s *scaleRun) waitersRow(w *peerWork, f int) error {
	n := scaleWaiters * f
	if err := w.warmQueue(); err != nil {
		return err
	}
	line, _, err := w.queueRow(n, map[string]int{"curator": n})
	if err != nil {
		return err
	}
	s.lines = append(s.lines, line)
	s.peerFigs("waiters", "time per hand-off", "µs", true, "µs/hand-off", f, n, func(rate float64) float64 { return 1e6 / rate })
	s.noted(w, fmt.Sprintf("queue%d", n), "pkts", "waiters", "server packets received per hand-off", "packets", true, f, n)
	return nil
}
