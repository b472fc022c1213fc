package engine

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// ValidatePath checks that p is an absolute ZooKeeper path with no trailing
// slash, no empty, "." or ".." segment and no NUL or control character. The
// error wraps ErrInvalidPath.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path", zkerr.ErrInvalidPath)
	case p[0] != '/':
		return fmt.Errorf("%w: %q is relative (must start with /)", zkerr.ErrInvalidPath, p)
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%w: %q ends with /", zkerr.ErrInvalidPath, p)
	}
	for rest, more := p[1:], true; more; { // the segments, without allocating
		var seg string
		seg, rest, more = strings.Cut(rest, "/")
		switch seg {
		case "":
			return fmt.Errorf("%w: %q has an empty segment", zkerr.ErrInvalidPath, p)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", zkerr.ErrInvalidPath, p, seg)
		}
	}
	if printableASCII(p) { // the usual case: no character to decode
		return nil
	}
	for _, r := range p {
		if r == 0 {
			return fmt.Errorf("%w: %q contains NUL", zkerr.ErrInvalidPath, p)
		}
		if r == unicode.ReplacementChar || (r > 0 && r < 0x20) || (r >= 0x7f && r <= 0x9f) ||
			(r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) || r > 0xffff {
			// (Beyond the BMP, Java sees a surrogate pair, which the server refuses.)
			return fmt.Errorf("%w: %q contains character %U", zkerr.ErrInvalidPath, p, r)
		}
	}
	return nil
}

// printableASCII reports whether s holds only the bytes 0x20 to 0x7e,
// which ValidatePath accepts in any segment.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// JoinPath joins a parent path and a child name.
func JoinPath(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}

// SplitPath returns the parent path and the last segment of an absolute path.
func SplitPath(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/", p[i+1:]
	}
	return p[:i], p[i+1:]
}

// FullPath validates a recipe path and applies the client's namespace to it,
// giving the path as the server knows it.
func (c *Client) FullPath(p string) (string, error) {
	if c == nil {
		return "", zkerr.ErrNilClient
	}
	if err := ValidatePath(p); err != nil {
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

// Reserved is the server's own tree (quotas, configuration).
const Reserved = "/zookeeper"

// IsReserved reports whether the server path full is the server's own
// tree or under it, where nothing of ours may be written.
func IsReserved(full string) bool {
	return full == Reserved || strings.HasPrefix(full, Reserved+"/")
}

// WritablePath is FullPath for a write: the server's reserved tree is
// refused with ErrInvalidPath.
func (c *Client) WritablePath(p string) (string, error) {
	full, err := c.FullPath(p)
	if err != nil {
		return "", err
	}
	if IsReserved(full) {
		return "", fmt.Errorf("%w: %s is in the server's reserved tree %s", zkerr.ErrInvalidPath, full, Reserved)
	}
	return full, nil
}
