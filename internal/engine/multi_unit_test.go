package engine

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Unit tests of the typed transaction ops; no server needed.

func TestOpRequests(t *testing.T) {
	var aclPaths []string
	readOnly := zk.WorldACL(zk.PermRead)
	c := &Client{cfg: Config{Namespace: "/ns", ACL: func(p string) []zk.ACL {
		aclPaths = append(aclPaths, p)
		return readOnly
	}}}
	ops := []Op{
		CreateOp("/a", []byte("x"), zk.FlagEphemeral),
		SetOp("/b", []byte("y"), 3),
		DeleteOp("/c", 4),
		CheckOp("/", -1),
	}
	full, err := c.NamespaceOps("multi", ops)
	require.NoError(t, err)
	assert.Equal(t, "/a", ops[0].path, "the caller's ops are left as they were")
	var names []string
	for _, o := range full {
		names = append(names, o.String())
	}
	assert.Equal(t, []string{"create /ns/a", "set /ns/b", "delete /ns/c", "check /ns"}, names)

	reqs, err := requests("multi", full, c.cfg.ACL)
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
	c := &Client{cfg: Config{ACL: DefaultConfig().ACL}}
	assert.Equal(t, "zero op", Op{}.String())
	_, err := c.NamespaceOps("fenced", []Op{CheckOp("/a", -1), {}})
	assert.ErrorIs(t, err, zkerr.ErrInvalidArgument)
	assert.ErrorContains(t, err, "fenced op 1 is the zero Op")
	_, err = requests("multi", []Op{{}}, c.cfg.ACL)
	assert.ErrorIs(t, err, zkerr.ErrInvalidArgument)
	assert.ErrorContains(t, err, "multi op 0 is the zero Op")
	_, err = c.NamespaceOps("multi", []Op{SetOp("relative", nil, -1)})
	assert.ErrorIs(t, err, zkerr.ErrInvalidPath)
	assert.ErrorContains(t, err, "multi op 0")
	_, err = (*Client)(nil).Multi(t.Context(), Op{})
	assert.ErrorIs(t, err, zkerr.ErrNilClient, "a nil client is said first")
}

func TestMultiErrorNamesTheOp(t *testing.T) {
	ops := []Op{CheckOp("/ns/a", -1), DeleteOp("/ns/missing", -1)}
	res := []zk.MultiResponse{{}, {Error: zk.ErrNoNode}}
	err := MultiError("multi", ops, res, errors.New("generic"))
	assert.ErrorIs(t, err, zk.ErrNoNode)
	assert.EqualError(t, err, "zkrecipes: multi: delete /ns/missing: zk: node does not exist")
	err = MultiError("multi", ops, nil, zk.ErrConnectionClosed)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
}
