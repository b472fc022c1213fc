// Package zkpath holds the module's rules for ZooKeeper paths and node
// names: what a valid path is, joining and splitting, the server's
// reserved tree, and the names protected creates make. It is a leaf: the
// engine, the recipes and the tools share it.
package zkpath

import (
	"crypto/rand"
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

// ValidateName checks that name makes one valid path segment: no "/", and
// what ValidatePath accepts in a segment. The error wraps ErrInvalidPath.
func ValidateName(name string) error {
	if strings.Contains(name, "/") {
		return fmt.Errorf("%w: node name %q holds a /", zkerr.ErrInvalidPath, name)
	}
	if name == "" {
		return fmt.Errorf("%w: empty node name", zkerr.ErrInvalidPath)
	}
	if printableASCII(name) && name != "." && name != ".." { // without building the path
		return nil
	}
	return ValidatePath("/" + name)
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

// Reserved is the server's own tree (quotas, configuration).
const Reserved = "/zookeeper"

// IsReserved reports whether the server path full is the server's own
// tree or under it, where nothing of ours may be written.
func IsReserved(full string) bool {
	return full == Reserved || strings.HasPrefix(full, Reserved+"/")
}

// ProtectedPrefix marks a node made by a protected create, as in Curator:
// the node's name is ProtectedPrefix + <uuid> + "-" + name.
const ProtectedPrefix = "_c_"

// NewUUID returns a random (version 4) UUID in its 36-character dashed form.
func NewUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("zkrecipes: crypto/rand failed: " + err.Error()) // never happens on supported platforms
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 36)
	j := 0
	for i, v := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hex[v>>4], hex[v&0xf]
		j += 2
	}
	return string(out)
}

// ParseProtected splits a name made by a protected create,
// ProtectedPrefix + <uuid> + "-" + rest, where uuid has the dashed
// 8-4-4-4-12 hexadecimal form, into its uuid and rest; ok is false for any
// other name. Tools that read the recipes' nodes (cmd/zkinspect) use it to
// recognise them as the engine does.
func ParseProtected(name string) (uuid, rest string, ok bool) {
	u, ok := uuidOf(name)
	if !ok {
		return "", "", false
	}
	return u, name[len(ProtectedPrefix)+len(u)+1:], true
}

// uuidOf returns the uuid of a name made by a protected create,
// ProtectedPrefix + <uuid> + "-" + rest, where uuid has the dashed
// 8-4-4-4-12 hexadecimal form; ok is false for any other name.
func uuidOf(name string) (uuid string, ok bool) {
	const n = len(ProtectedPrefix) + 36
	if len(name) <= n || !strings.HasPrefix(name, ProtectedPrefix) || name[n] != '-' {
		return "", false
	}
	u := name[len(ProtectedPrefix):n]
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return "", false
			}
		}
	}
	return u, true
}
