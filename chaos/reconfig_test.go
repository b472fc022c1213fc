//go:build chaos

package chaos

// zk-reconfig-replace: a member of the ensemble replaced through dynamic
// reconfiguration while the workers run. The ensemble is then started
// WithReconfig (zktest refuses that with WithTLS: before ZooKeeper 3.10
// the dynamic configuration names no TLS client address). The suite keeps
// three places (slots), each the address of one member for every proxy;
// the fault starts a new member, reconfigures it in, points the proxies
// of the replaced member's place at it, reconfigures the old member out
// (the leader one time in three, else a follower; every member has worker
// connections through the proxies) and stops it. The workers and the
// cache worker go through the proxies, which are the suite's means of
// cutting and black-holing them, so they do not follow the ensemble
// (recipes.WithoutEnsembleTracking): the proxies move for them, as a
// load balancer's address would. The test process's direct clients (the
// admin client, the watchers and the checks) follow the reconfiguration
// (the default): after a few replacements none of the members they were
// given is left.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// envReconfig tells a worker process the ensemble may be reconfigured:
// "1", so its client keeps to its proxies.
const envReconfig = "ZKCHAOS_RECONFIG"

// wantReconfig says whether TestChaos starts the ensemble WithReconfig:
// when -faults names zk-reconfig-replace (an error with -tls), or is
// "all" without -tls (the kind is then injected only on a server that
// survives the member faults, parseFaults; the version is known only once
// the ensemble runs, so an older one is started WithReconfig too).
func wantReconfig(faults string, tls bool) (bool, error) {
	named := false
	for _, k := range strings.Split(faults, ",") {
		named = named || strings.TrimSpace(k) == fReconfigReplace
	}
	if named && tls {
		return false, fmt.Errorf("-faults %s needs an ensemble started WithReconfig, which zktest refuses over TLS (before ZooKeeper 3.10 the dynamic configuration names no TLS client address): not with -tls", fReconfigReplace)
	}
	return named || faults == "all" && !tls, nil
}

// proxiedOpts are the options of a client that goes through the suite's
// proxies: on a reconfigurable ensemble it must not follow the members'
// own addresses, past its proxies.
func proxiedOpts(reconfig bool) []recipes.Option {
	if reconfig {
		return []recipes.Option{recipes.WithoutEnsembleTracking()}
	}
	return nil
}

// newProxy returns a proxy to target, the member at place slot, which
// replaceMember moves to the member that replaces it.
func (h *harness) newProxy(slot int, target string) *zktest.Proxy {
	px := zktest.NewProxy(h.t, target)
	h.mu.Lock()
	h.slotProxies[slot] = append(h.slotProxies[slot], px)
	h.mu.Unlock()
	return px
}

// slotServers returns the addresses of the members at the three places.
func (h *harness) slotServers() []string {
	all := h.zkc.Servers()
	var out []string
	for _, i := range h.slots {
		out = append(out, all[i])
	}
	return out
}

// leaderSlot returns the place of the leader.
func (h *harness) leaderSlot() (int, error) {
	l, err := h.zkc.Leader()
	if err != nil {
		return -1, err
	}
	if s := slices.Index(h.slots, l); s >= 0 {
		return s, nil
	}
	return -1, fmt.Errorf("the leader zk%d has no place among %v", l+1, h.slots)
}

// replaceMember runs zk-reconfig-replace. The new member is started and
// synced before the fault begins; the fault is the two reconfigurations
// and the old member's stop.
func (h *harness) replaceMember(f *fault) error {
	l, err := h.leaderSlot()
	if err != nil {
		return err
	}
	slot, who := l, "leader"
	if h.params.IntN(3) != 0 {
		slot, who = (l+1+h.params.IntN(2))%3, "follower"
	}
	old := h.slots[slot]
	conns := h.clientConns(old)
	nu, err := h.zkc.AddMember(false)
	if err != nil {
		return err
	}
	f.target = fmt.Sprintf("zk%d->zk%d", old+1, nu+1)
	f.start = time.Now()
	if err := h.zkc.Reconfig([]int{nu}, nil); err != nil {
		return err
	}
	addr := h.zkc.Servers()[nu]
	h.mu.Lock()
	for _, px := range h.slotProxies[slot] {
		px.Retarget(addr)
	}
	h.mu.Unlock()
	h.slots[slot] = nu
	joined := time.Since(f.start)
	if err := h.zkc.Reconfig(nil, []int{old}); err != nil {
		return err
	}
	left := time.Since(f.start)
	if err := h.zkc.Stop(old); err != nil {
		return err
	}
	f.heal = time.Now()
	f.note = fmt.Sprintf("the %s replaced, %d client connections on it; in after %.3fs, out after %.3fs",
		who, conns, joined.Seconds(), left.Seconds())
	return nil
}

// clientConns counts member i's client connections ("cons"), -1 when it
// does not answer.
func (h *harness) clientConns(i int) int {
	out, err := h.zkc.FourLetter(i, "cons")
	if err != nil {
		return -1
	}
	return strings.Count(out, "queued=")
}

// TestWantReconfig: the ensemble starts WithReconfig for -faults all
// (not over TLS) or when zk-reconfig-replace is named (an error over TLS).
func TestWantReconfig(t *testing.T) {
	for _, tc := range []struct {
		faults    string
		tls, want bool
	}{
		{"", false, false}, {"all", false, true}, {"all", true, false},
		{fKillHolder, false, false}, {fKillHolder + "," + fReconfigReplace, false, true},
	} {
		if got, err := wantReconfig(tc.faults, tc.tls); err != nil || got != tc.want {
			t.Errorf("wantReconfig(%q, tls %v) = %v, %v; want %v", tc.faults, tc.tls, got, err, tc.want)
		}
	}
	if _, err := wantReconfig(fReconfigReplace, true); err == nil {
		t.Errorf("-faults %s with -tls accepted", fReconfigReplace)
	}
}
