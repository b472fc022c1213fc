package recipeargs

import (
	"context"
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes"
)

type opts struct{ seen []int }

type option func(*opts) error

func TestOptions(t *testing.T) {
	add := func(n int) option { return func(o *opts) error { o.seen = append(o.seen, n); return nil } }
	var o opts
	if err := Options(&o, []option{add(1), add(2), add(3)}); err != nil || len(o.seen) != 3 || o.seen[0] != 1 || o.seen[2] != 3 {
		t.Fatalf("Options = %v, seen %v; want nil, [1 2 3]", err, o.seen)
	}
	if err := Options(&o, []option{add(4), nil}); !errors.Is(err, recipes.ErrInvalidArgument) {
		t.Errorf("a nil option: %v, want ErrInvalidArgument", err)
	}
	bad := errors.New("bad value")
	o = opts{}
	if err := Options(&o, []option{func(*opts) error { return bad }, add(5)}); !errors.Is(err, bad) || len(o.seen) != 0 {
		t.Errorf("a refused option: %v, seen %v; want its error, and no option after it applied", err, o.seen)
	}
}

func TestNilClient(t *testing.T) {
	if err := Client(nil); !errors.Is(err, recipes.ErrNilClient) {
		t.Errorf("Client(nil) = %v, want ErrNilClient", err)
	}
	if _, err := Path(nil, "/lock", "a lock path"); !errors.Is(err, recipes.ErrNilClient) {
		t.Errorf("Path(nil, ...) = %v, want ErrNilClient", err)
	}
	if _, err := ReadPath(nil, nil, "/lock"); !errors.Is(err, recipes.ErrNilClient) { //nolint:staticcheck // a nil ctx on purpose
		t.Errorf("ReadPath(nil, nil, ...) = %v, want ErrNilClient first", err)
	}
}

func TestContext(t *testing.T) {
	if err := Context(nil); !errors.Is(err, recipes.ErrInvalidArgument) { //nolint:staticcheck // a nil ctx on purpose
		t.Errorf("Context(nil) = %v, want ErrInvalidArgument", err)
	}
	if err := Context(context.Background()); err != nil {
		t.Errorf("Context(Background) = %v", err)
	}
}
