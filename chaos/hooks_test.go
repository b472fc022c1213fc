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

// runHooks run in the parent alongside the faults: each is started once
// the workers serve and returns a stop function, called (in order) when
// the faults end, before the workers are stopped.
var runHooks []func(h *harness) (stop func())

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
