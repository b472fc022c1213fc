package zktest

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Three voters and an observer: the observer's line says so in every
// member's zoo.cfg, it serves as an observer, and the per-member controls
// work on it.
func TestObservers(t *testing.T) {
	t.Parallel()
	if usingExternal() {
		if _, err := Launch(3, WithObservers(1)); err == nil {
			t.Fatal("WithObservers launched on " + EnvServers)
		}
		t.Skip("starts observers: needs servers this package starts")
	}
	c := StartEnsemble(t, 3, WithObservers(1))
	requireLocal(t, c)
	all := c.Servers()
	if c.Len() != 4 || !slices.Equal(c.Voters(), all[:3]) || !slices.Equal(c.Observers(), all[3:]) {
		t.Fatalf("Servers %v, Voters %v, Observers %v", all, c.Voters(), c.Observers())
	}
	if !c.IsObserver(3) || c.IsObserver(0) || c.IsObserver(4) {
		t.Fatal("IsObserver wrong")
	}
	for i := range all {
		data, err := os.ReadFile(c.local.members[i].cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		cfg := string(data)
		if !strings.Contains(cfg, "server.4=127.0.0.1:") || !strings.Contains(cfg, ":observer\n") ||
			strings.Count(cfg, ":observer") != 1 || strings.Contains(cfg, "peerType=observer") != (i == 3) {
			t.Fatalf("zoo.cfg of member %d:\n%s", i, cfg)
		}
	}
	if m := c.mode4(3, time.Second); m != "observer" {
		t.Fatalf("member 3 mode %q", m)
	}

	voter := connect(t, c.Voters(), 4*time.Second)
	obs := connect(t, c.Observers(), 4*time.Second)
	if _, err := voter.Create("/obs", []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	readObs := func(want string) {
		t.Helper()
		if _, err := obs.Sync("/obs"); err != nil {
			t.Fatal(err)
		}
		if data, _, err := obs.Get("/obs"); err != nil || string(data) != want {
			t.Fatalf("observer reads %q, %v; want %q", data, err, want)
		}
	}
	readObs("1")

	for _, step := range []struct {
		name string
		do   func(int) error
	}{{"kill", c.Kill}, {"restart", c.Restart}, {"stop", c.Stop}, {"restart", c.Restart}, {"pause", c.Pause}, {"resume", c.Resume}} {
		if err := step.do(3); err != nil {
			t.Fatalf("%s observer: %v", step.name, err)
		}
	}
	if m := c.mode4(3, time.Second); m != "observer" {
		t.Fatalf("member 3 mode after restarts %q", m)
	}
	if _, err := voter.Set("/obs", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "observer session back", func() bool { return obs.State() == zk.StateHasSession })
	readObs("2")
}

// With WithReconfig the observer is in the dynamic configuration.
func TestObserversReconfig(t *testing.T) {
	t.Parallel()
	if usingExternal() {
		t.Skip("starts observers: needs servers this package starts")
	}
	link := WithObserverLinks(func(_, _ int, addr string) (string, error) { return addr, nil })
	if _, err := Launch(1, WithReconfig(), WithObservers(1), link); err == nil {
		t.Fatal("WithObserverLinks with WithReconfig launched")
	}
	c := StartEnsemble(t, 1, WithReconfig(), WithObservers(1))
	requireLocal(t, c)
	cfg, err := c.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg, "server.1=") || !strings.Contains(cfg, ":participant;") || !strings.Contains(cfg, "server.2=") || !strings.Contains(cfg, ":observer;") {
		t.Fatalf("config = %q", cfg)
	}
	if m := c.mode4(1, time.Second); m != "observer" || !c.IsObserver(1) {
		t.Fatalf("member 1 mode %q", m)
	}
}
