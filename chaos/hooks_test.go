//go:build chaos

package chaos

// Registries through which a recipe's worker joins the suite from a file
// of its own: its role, worker count and pacing (added to roles, workers
// and pace by an init function), its loop, the nodes it needs made before
// the workers start, and its check. TestChaos, runWorker and check consult
// them after the built-in roles.

// roleRunners are the loops of the roles registered from other files.
var roleRunners = map[string]func(*worker) error{}

// setupPaths are persistent nodes TestChaos makes (in order) before the
// workers start.
var setupPaths []string

// roleChecks run after the built-in checks, in order; each may add
// violations, notes and a part of the summary line (report.extra).
var roleChecks []func(h *harness, rep *report, logs map[string][]event)

// roleWatchers run in the test process beside the workers (an observer of
// ZooKeeper of a role's own): each starts once every worker served, before
// the first fault, and returns a stop function that TestChaos calls (on a
// goroutine of its own, beside the cache worker's stop) once the faults
// end, and waits for before the workers stop.
var roleWatchers []func(h *harness) (stop func())

// registerRole adds a role with n workers and its pacing and loop.
func registerRole(role string, n int, p pacing, run func(*worker) error) {
	roles = append(roles, role)
	workers = append(workers, struct {
		role string
		n    int
	}{role, n})
	pace[role] = p
	roleRunners[role] = run
}
