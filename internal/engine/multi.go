package engine

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/go-zookeeper/zk"
)

// NamespaceOps returns copies of ops, transaction operations on recipe
// paths (*zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest,
// *zk.CheckVersionRequest), with the namespace applied to their paths, and
// those server paths, one per op. A nil op, another type or a bad path is
// refused.
func (c *Client) NamespaceOps(what string, ops []any) ([]any, []string, error) {
	out := make([]any, len(ops))
	paths := make([]string, len(ops))
	for i, op := range ops {
		if op == nil || reflect.ValueOf(op).Kind() == reflect.Pointer && reflect.ValueOf(op).IsNil() {
			return nil, nil, fmt.Errorf("%w: %s op %d is nil", ErrInvalidArgument, what, i)
		}
		var p *string
		switch op := op.(type) {
		case *zk.CreateRequest:
			cp := *op
			out[i], p = &cp, &cp.Path
		case *zk.SetDataRequest:
			cp := *op
			out[i], p = &cp, &cp.Path
		case *zk.DeleteRequest:
			cp := *op
			out[i], p = &cp, &cp.Path
		case *zk.CheckVersionRequest:
			cp := *op
			out[i], p = &cp, &cp.Path
		default:
			return nil, nil, fmt.Errorf("%w: %s op %d is a %T, not a *zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest or *zk.CheckVersionRequest", ErrInvalidArgument, what, i, op)
		}
		full, err := c.FullPath(*p)
		if err != nil {
			return nil, nil, fmt.Errorf("%s op %d: %w", what, i, err)
		}
		*p, paths[i] = full, full
	}
	return out, paths, nil
}

// StripNamespace returns the server path p as a recipe path: without the
// namespace.
func (c *Client) StripNamespace(p string) string {
	ns := c.cfg.namespace
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

// MultiError names the op that failed a transaction: its kind and server
// path, with the error the server gave. paths are the ops' paths, in order.
func MultiError(what string, ops []any, paths []string, res []zk.MultiResponse, err error) error {
	for i, r := range res {
		if r.Error != nil && i < len(ops) {
			return fmt.Errorf("zkrecipes: %s: %s %s: %w", what, opKind(ops[i]), paths[i], r.Error)
		}
	}
	return fmt.Errorf("zkrecipes: %s: %w", what, err)
}

func opKind(op any) string {
	switch op.(type) {
	case *zk.CreateRequest:
		return "create"
	case *zk.SetDataRequest:
		return "set"
	case *zk.DeleteRequest:
		return "delete"
	case *zk.CheckVersionRequest:
		return "check"
	}
	return "op"
}
