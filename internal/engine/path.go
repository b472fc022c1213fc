package engine

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// FullPath validates a recipe path and applies the client's namespace to it,
// giving the path as the server knows it.
func (c *Client) FullPath(p string) (string, error) {
	if c == nil {
		return "", zkerr.ErrNilClient
	}
	if err := zkpath.ValidatePath(p); err != nil {
		return "", err
	}
	if c.cfg.Namespace == "" {
		return p, nil
	}
	if p == "/" {
		return c.cfg.Namespace, nil
	}
	return c.cfg.Namespace + p, nil
}

// WritablePath is FullPath for a write: the server's reserved tree is
// refused with ErrInvalidPath.
func (c *Client) WritablePath(p string) (string, error) {
	full, err := c.FullPath(p)
	if err != nil {
		return "", err
	}
	if zkpath.IsReserved(full) {
		return "", fmt.Errorf("%w: %s is in the server's reserved tree %s", zkerr.ErrInvalidPath, full, zkpath.Reserved)
	}
	return full, nil
}
