package recipeargs_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// The server's reserved tree is no place for a recipe, with or without a
// namespace that puts the path there.
func TestReservedTreeRefused(t *testing.T) {
	zkc := zktest.Start(t)
	c := testutil.Connect(t, zkc.Servers())
	for _, p := range []string{"/zookeeper", "/zookeeper/quota", "/zookeeper/config/x"} {
		_, err := recipeargs.Path(c, p, "a lock path")
		assert.ErrorIs(t, err, recipes.ErrInvalidPath, p)
		assert.ErrorContains(t, err, "reserved", p)
	}
	for _, p := range []string{"/zookeeperx", "/app/zookeeper"} {
		_, err := recipeargs.Path(c, p, "a lock path")
		assert.NoError(t, err, p)
	}
	ns := testutil.Connect(t, zkc.Servers(), recipes.WithNamespace("zookeeper"))
	_, err := recipeargs.Path(ns, "/locks", "a lock path")
	assert.ErrorIs(t, err, recipes.ErrInvalidPath, "a namespace inside the reserved tree")
	_, err = mutex.New(c, "/zookeeper/lock")
	assert.ErrorIs(t, err, recipes.ErrInvalidPath, "mutex.New")
}
