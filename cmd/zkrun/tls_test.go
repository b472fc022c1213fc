package main

import (
	"path/filepath"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestLockOverTLS: zkrun holds a lock on a TLS-only ensemble with
// ssl.clientAuth=need, given the -tls flags.
func TestLockOverTLS(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithTLS())
	obs := observer(t, zkc)
	marker, path := filepath.Join(t.TempDir(), "holder"), newPath()
	p := zkrun(t, zkc, append([]string{"lock", path, "--"}, blocker(marker)...)...)
	s := waitStarted(t, marker)
	if kids := waitChildren(t, obs, path, 1); path+"/"+kids[0] != s.node {
		t.Fatalf("the lock node %s, the child's %s", kids[0], s.node)
	}
	p.release()
	if code := p.wait(t); code != 0 {
		t.Fatalf("zkrun: exit %d, want 0", code)
	}
	waitChildren(t, obs, path, 0)
}
