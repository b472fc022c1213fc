package engine

import (
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Namespace returns the client's namespace, which maps recipe paths to
// server paths (Full, Writable) and back (Strip). A nil or zero Client's
// refuses every path with ErrNilClient.
func (c *Client) Namespace() zkpath.Namespace {
	if c.unmade() {
		return zkpath.NoNamespace(zkerr.ErrNilClient)
	}
	return zkpath.NewNamespace(c.cfg.Namespace)
}
