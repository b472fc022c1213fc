package zkop

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Unit tests of the typed transaction ops; no server needed.

func TestOpRequests(t *testing.T) {
	var aclPaths []string
	readOnly := zk.WorldACL(zk.PermRead)
	ns := zkpath.NewNamespace("/ns")
	acl := func(p string) []zk.ACL {
		aclPaths = append(aclPaths, p)
		return readOnly
	}
	ops := []Op{
		Create("/a", []byte("x"), zk.FlagEphemeral),
		Set("/b", []byte("y"), 3),
		Delete("/c", 4),
		Check("/", -1),
	}
	full, err := OnServer("multi", ops, ns)
	require.NoError(t, err)
	assert.Equal(t, "/a", ops[0].path, "the caller's ops are left as they were")
	var names []string
	for _, o := range full {
		names = append(names, o.String())
	}
	assert.Equal(t, []string{"create /ns/a", "set /ns/b", "delete /ns/c", "check /ns"}, names)

	reqs, err := Requests("multi", full, acl)
	require.NoError(t, err)
	assert.Equal(t, []any{
		&zk.CreateRequest{Path: "/ns/a", Data: []byte("x"), Flags: zk.FlagEphemeral, Acl: readOnly},
		&zk.SetDataRequest{Path: "/ns/b", Data: []byte("y"), Version: 3},
		&zk.DeleteRequest{Path: "/ns/c", Version: 4},
		&zk.CheckVersionRequest{Path: "/ns", Version: -1},
	}, reqs)
	assert.Equal(t, []string{"/ns/a"}, aclPaths, "the provider is asked for the create's server path only")
}

func TestZeroOpRefused(t *testing.T) {
	assert.Equal(t, "zero op", Op{}.String())
	_, err := OnServer("fenced", []Op{Check("/a", -1), {}}, zkpath.Namespace{})
	assert.ErrorIs(t, err, zkerr.ErrInvalidArgument)
	assert.ErrorContains(t, err, "fenced op 1 is the zero Op")
	_, err = Requests("multi", []Op{{}}, func(string) []zk.ACL { return nil })
	assert.ErrorIs(t, err, zkerr.ErrInvalidArgument)
	assert.ErrorContains(t, err, "multi op 0 is the zero Op")
	_, err = OnServer("multi", []Op{Set("relative", nil, -1)}, zkpath.Namespace{})
	assert.ErrorIs(t, err, zkerr.ErrInvalidPath)
	assert.ErrorContains(t, err, "multi op 0")
}

func TestMultiErrorNamesTheOp(t *testing.T) {
	ops := []Op{Check("/ns/a", -1), Delete("/ns/missing", -1)}
	res := []zk.MultiResponse{{}, {Error: zk.ErrNoNode}}
	err := Error("multi", ops, res, errors.New("generic"))
	assert.ErrorIs(t, err, zk.ErrNoNode)
	assert.EqualError(t, err, "zkrecipes: multi: delete /ns/missing: zk: node does not exist")
	err = Error("multi", ops, nil, zk.ErrConnectionClosed)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
}
