// Package recipeargs holds the argument checks that the constructors and
// the read functions of the recipe packages (mutex, semaphore, election,
// cleanup) share, so that each refuses bad input with the same sentinel
// errors and messages.
package recipeargs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkop"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Client checks that c is a client a recipe can use: not nil
// (recipes.ErrNilClient) and not closed.
func Client(c *recipes.Client) error {
	if c == nil {
		return recipes.ErrNilClient
	}
	return (*engine.Client)(c).Check()
}

// Engine checks c as Client does and returns the engine behind it.
func Engine(c *recipes.Client) (*engine.Client, error) {
	if err := Client(c); err != nil {
		return nil, err
	}
	return (*engine.Client)(c), nil
}

// Path checks c (as Client does) and path, and returns path with the
// client's namespace applied. The root and the server's reserved tree
// (/zookeeper and below) are refused (recipes.ErrInvalidPath) with what,
// the role of the path, in the message: "a lock path", say.
func Path(c *recipes.Client, path, what string) (string, error) {
	if err := Client(c); err != nil {
		return "", err
	}
	full, err := c.FullPath(path)
	if err != nil {
		return "", err
	}
	if full == "/" {
		return "", fmt.Errorf("%w: the root cannot be %s", recipes.ErrInvalidPath, what)
	}
	if zkpath.IsReserved(full) {
		return "", fmt.Errorf("%w: %s is in the server's reserved tree %s and cannot be %s", recipes.ErrInvalidPath, full, zkpath.Reserved, what)
	}
	return full, nil
}

// Context checks that ctx is not nil (recipes.ErrInvalidArgument).
func Context(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	return nil
}

// ReadPath checks the arguments of a function that reads at path: c not
// nil, ctx not nil, c not closed, path valid. It returns path with the
// client's namespace applied; the root is allowed.
func ReadPath(ctx context.Context, c *recipes.Client, path string) (string, error) {
	if c == nil {
		return "", recipes.ErrNilClient
	}
	if err := Context(ctx); err != nil {
		return "", err
	}
	if err := (*engine.Client)(c).Check(); err != nil {
		return "", err
	}
	return c.FullPath(path)
}

// Options applies opts to o in order. A nil option is refused
// (recipes.ErrInvalidArgument), and so is one that returns an error.
func Options[T any, O ~func(*T) error](o *T, opts []O) error {
	for _, opt := range opts {
		if opt == nil {
			return fmt.Errorf("%w: nil option", recipes.ErrInvalidArgument)
		}
		if err := opt(o); err != nil {
			return err
		}
	}
	return nil
}

// Logger is every package's WithLogger: an option that sets a recipe's
// logger with set, refusing a nil one (recipes.ErrInvalidArgument).
func Logger[T any](l *slog.Logger, set func(*T, *slog.Logger)) func(*T) error {
	return func(o *T) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", recipes.ErrInvalidArgument)
		}
		set(o, l)
		return nil
	}
}

// Participants turns the queue ReadQueue read into the public
// Participants; writer, if not nil, tells a read/write lock's write nodes.
func Participants(ms []engine.Member, writer func(contend.Contender) bool) []recipes.Participant {
	out := make([]recipes.Participant, len(ms))
	for i, m := range ms {
		out[i] = recipes.Participant{Node: m.Node, ID: string(m.Data), Holds: m.Holds}
		if writer != nil {
			out[i].Writer = writer(m.Contender)
		}
	}
	return out
}

// Ops returns the engine's ops for ops, for a hold's Fenced.
func Ops(ops []recipes.Op) []zkop.Op {
	out := make([]zkop.Op, len(ops))
	for i, o := range ops {
		out[i] = zkop.Of(o.Request())
	}
	return out
}
