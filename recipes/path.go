package recipes

import "github.com/zkrecipes/zkrecipes/internal/zkpath"

// ValidatePath checks that p is an absolute ZooKeeper path with no trailing
// slash, no empty, "." or ".." segment and no NUL or control character. The
// error wraps ErrInvalidPath.
func ValidatePath(p string) error { return zkpath.ValidatePath(p) }
