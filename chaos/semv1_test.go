//go:build chaos

package chaos

// The semaphore.V1 workers (Curator's InterProcessSemaphore): as the
// semaphore workers do, semGoroutines contenders per worker acquire a
// lease, count themselves in a gauge of their own (an ephemeral entry
// named after the lease node, made and deleted fenced by the lease), and
// more than semV1Max live leases in one count is a violation. V1's lease
// nodes sit directly under its path, so the gauge counts an entry as live
// while the node of that name under pathSemV1 exists. The gauge is under
// root/locks, where checkLeftovers finds any entry left behind.

import (
	"time"

	"github.com/zkrecipes/zkrecipes/semaphore"
)

const (
	roleSemV1   = "semv1"
	pathSemV1   = root + "/locks/semv1"
	gaugeV1Path = root + "/locks/gaugev1"
	semV1Max    = 2
)

var semV1Gauge = semGauge{gauge: gaugeV1Path, leases: pathSemV1, what: roleSemV1, max: semV1Max}

func init() {
	registerRole(roleSemV1, 2, pacing{10 * time.Millisecond, 40 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}, (*worker).runSemV1)
	setupPaths = append(setupPaths, gaugeV1Path)
	roleChecks = append(roleChecks, func(h *harness, rep *report, logs map[string][]event) {
		h.checkSemaphore(rep, roleSemV1, semV1Max, logs[roleSemV1])
	})
}

func (w *worker) runSemV1() error {
	s, err := semaphore.NewV1(w.c, pathSemV1, semV1Max, semaphore.WithData([]byte(w.name)))
	if err != nil {
		return err
	}
	return w.runSemaphore(s, semV1Gauge)
}
