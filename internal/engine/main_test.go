package engine_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var eventually = testutil.Eventually

// connect returns a client closed at the end of the test.
func connect(t *testing.T, servers []string, opts ...recipes.Option) *recipes.Client {
	return testutil.Connect(t, servers, opts...)
}
