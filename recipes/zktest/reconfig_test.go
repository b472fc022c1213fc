package zktest

import (
	"strings"
	"testing"
)

// A WithReconfig ensemble of one grows by a member and an observer, then
// loses its first member; Config shows each step.
func TestReconfig(t *testing.T) {
	if usingExternal() {
		t.Skip("adds members: needs servers this package starts")
	}
	if _, err := Launch(1, WithReconfig(), WithTLS()); err == nil {
		t.Fatal("WithReconfig with WithTLS launched")
	}
	c := StartEnsemble(t, 1, WithReconfig())
	requireLocal(t, c)
	if err := Start(t).Reconfig(nil, nil); err == nil {
		t.Fatal("Reconfig on a cluster started without WithReconfig")
	}
	cfg, err := c.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg, "server.1=127.0.0.1:") || !strings.Contains(cfg, ";127.0.0.1:"+port(c.Servers()[0])) {
		t.Fatalf("config of one member = %q", cfg)
	}

	p, err := c.AddMember(false)
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.AddMember(true)
	if err != nil {
		t.Fatal(err)
	}
	if p != 1 || o != 2 || c.Len() != 3 {
		t.Fatalf("AddMember = %d, %d; Len = %d", p, o, c.Len())
	}
	if err := c.Reconfig([]int{p, o}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconfig(nil, []int{0}); err != nil {
		t.Fatal(err)
	}
	cfg, err = c.Config()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cfg, "server.1=") || !strings.Contains(cfg, "server.2=") || !strings.Contains(cfg, ":observer;") {
		t.Fatalf("config after adding 2 and 3 and removing 1 = %q", cfg)
	}
}

func port(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
