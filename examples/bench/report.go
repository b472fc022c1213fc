package main

import (
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// reportRow is one workload's line in the -md report.
type reportRow struct {
	workload, ours, base string
	ratio, target        float64
	hasTarget, met       bool
	lowerBetter          bool // the figure must stay at or below the target
	note                 string
}

var report []reportRow

func addReport(rs ...reportRow) { report = append(report, rs...) }

// machine describes the machine: CPUs, CPU model, Go version.
func machine() string {
	model := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	nproc := fmt.Sprint(runtime.NumCPU())
	if out, err := exec.Command("nproc").Output(); err == nil {
		nproc = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("nproc %s, CPU %s, %s %s/%s", nproc, model, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// serverInfo reads the version (srvr) and tickTime (conf) of the first server.
func (b *bench) serverInfo() string {
	version, tick := "unknown", "unknown"
	if out, err := fourLetter(b.servers[0], "srvr"); err == nil {
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "Zookeeper version: "); ok {
				version = strings.TrimSpace(v)
			}
		}
	}
	if out, err := fourLetter(b.servers[0], "conf"); err == nil {
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "tickTime="); ok {
				tick = strings.TrimSpace(v) + " ms"
			}
		}
	}
	return fmt.Sprintf("ZooKeeper %s, %d server(s), tickTime %s, fsync on (forceSync left at its default, yes)", version, len(b.servers), tick)
}

func (b *bench) writeMarkdown(file string) error {
	svgFile := strings.TrimSuffix(file, filepath.Ext(file)) + ".svg"
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Benchmarks\n\n")
	fmt.Fprintf(&sb, "Written by `go run ./examples/bench %s` on %s.\n\n", strings.Join(os.Args[1:], " "), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&sb, "- Machine: %s.\n", machine())
	fmt.Fprintf(&sb, "- Server: %s.\n", b.serverInfo())
	fmt.Fprintf(&sb, "- Rounds: %d per scenario, %v per side per timed round, sides alternating which goes first; figures are medians over rounds.\n", b.f.rounds, b.f.duration)
	fmt.Fprintf(&sb, "- **The figures are noisy**: the machine has few cores, the server runs on it too, and another engineer's chaos test runs on the same machine at times. Ratios measured in the same rounds are more trustworthy than the absolute rates.\n\n")
	if len(report) > 0 {
		fmt.Fprintf(&sb, "![ratios against targets](%s)\n\n", filepath.Base(svgFile))
		fmt.Fprintf(&sb, "| workload | ours | baseline | ratio / figure | target | met? | notes |\n|---|---|---|---|---|---|---|\n")
	}
	for _, r := range report {
		target, met := "—", "—"
		if r.hasTarget {
			if r.lowerBetter {
				target = fmt.Sprintf("≤ %g", r.target)
			} else {
				target = fmt.Sprintf("≥ %g", r.target)
			}
			met = "no"
			if r.met {
				met = "yes"
			}
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %.4g | %s | %s | %s |\n", r.workload, r.ours, r.base, r.ratio, target, met, r.note)
	}
	if len(report) > 0 {
		fmt.Fprintf(&sb, "\nRatios: keys and local are ours over the baseline (higher is better); queue is zk.Lock's time per hand-off over ours (higher: ours faster), and its growth row the cost at the largest queue over the smallest (time, requests and bytes, each at most 1.2×); herd and the remote waiter are counts that must stay at or below the target. Bytes in queue are the bytes the client read from its connections (a counting dialer), pings included. The remote waiter's figure is the longest streak of local hand-offs under one lock node of the local process queued ahead of the remote waiter's node: WithLocalHandoff bounds exactly that, before the lock goes back to the ZooKeeper queue.\n")
	}
	sb.WriteString(peersTable()) // peers.go; empty when the peers did not run
	sb.WriteString(cacheMD)      // cache.go; empty when the cache scenario did not run
	if err := os.WriteFile(file, []byte(sb.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(svgFile, []byte(chartSVG(report)), 0o644)
}

// chartSVG draws one bar per workload with a target: the figure as a
// fraction of its target (for "at most" targets, target over figure), so
// that 1.0, the line, is the target everywhere and bars past it meet it.
func chartSVG(rows []reportRow) string {
	var rs []reportRow
	for _, r := range rows {
		if r.hasTarget {
			rs = append(rs, r)
		}
	}
	const (
		left, barH, gap, width, top = 360, 22, 10, 360, 40
		maxScore                    = 2.0
	)
	h := top + len(rs)*(barH+gap) + 40
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", left+width+180, h)
	fmt.Fprintf(&sb, `<text x="10" y="20" font-size="14">Figure as a fraction of its target (1.0 = target met; bars capped at %.0f)</text>`+"\n", maxScore)
	x1 := left + int(float64(width)/maxScore)
	for i, r := range rs {
		score := 0.0
		switch {
		case r.lowerBetter && r.ratio <= 0:
			score = maxScore
		case r.lowerBetter:
			score = r.target / r.ratio
		case r.target > 0:
			score = r.ratio / r.target
		}
		w := int(min(score, maxScore) / maxScore * width)
		y := top + i*(barH+gap)
		color := "#c0392b"
		if r.met {
			color = "#27ae60"
		}
		op := "≥"
		if r.lowerBetter {
			op = "≤"
		}
		fmt.Fprintf(&sb, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+15, html.EscapeString(r.workload))
		fmt.Fprintf(&sb, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", left, y, max(w, 1), barH, color)
		fmt.Fprintf(&sb, `<text x="%d" y="%d">%.4g (target %s %g)</text>`+"\n", left+width+8, y+15, r.ratio, op, r.target)
	}
	fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black" stroke-dasharray="4,3"/>`+"\n", x1, top-8, x1, h-30)
	fmt.Fprintf(&sb, `<text x="%d" y="%d" text-anchor="middle">target</text>`+"\n", x1, h-14)
	sb.WriteString("</svg>\n")
	return sb.String()
}
