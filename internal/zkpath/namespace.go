package zkpath

import (
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Namespace maps recipe paths to the server's paths and back: it adds a
// Client's namespace prefix ("/app" for WithNamespace("app"), "" for
// none), as Curator's NamespaceImpl does. The zero Namespace adds
// nothing.
type Namespace struct {
	prefix string
	err    error // a Namespace of no Client: Full and Writable return it
}

// NewNamespace returns the Namespace of prefix ("" or "/name").
func NewNamespace(prefix string) Namespace { return Namespace{prefix: prefix} }

// NoNamespace returns a Namespace whose Full and Writable return err: the
// namespace of a nil Client.
func NoNamespace(err error) Namespace { return Namespace{err: err} }

// String returns the prefix ("" for none).
func (n Namespace) String() string { return n.prefix }

// Full validates a recipe path and adds the prefix, giving the path as
// the server knows it.
func (n Namespace) Full(p string) (string, error) {
	if n.err != nil {
		return "", n.err
	}
	if err := ValidatePath(p); err != nil {
		return "", err
	}
	if n.prefix == "" {
		return p, nil
	}
	if p == "/" {
		return n.prefix, nil
	}
	return n.prefix + p, nil
}

// Writable is Full for a write: the server's reserved tree is refused
// with ErrInvalidPath.
func (n Namespace) Writable(p string) (string, error) {
	full, err := n.Full(p)
	if err != nil {
		return "", err
	}
	if IsReserved(full) {
		return "", fmt.Errorf("%w: %s is in the server's reserved tree %s", zkerr.ErrInvalidPath, full, Reserved)
	}
	return full, nil
}

// Strip returns the server path p as a recipe path: without the prefix.
func (n Namespace) Strip(p string) string {
	ns := n.prefix
	switch {
	case ns == "" || !strings.HasPrefix(p, ns):
		return p
	case p == ns:
		return "/"
	case p[len(ns)] == '/':
		return p[len(ns):]
	}
	return p
}
