// Package zkop holds a transaction's operations (create, set, delete,
// version check) as the engine and the recipes build them, and turns them
// into go-zookeeper's requests: on server paths (OnServer), with the ACLs
// of the client's provider (Requests), and names the one that failed a
// transaction (Error). It is a leaf of the core.
package zkop

import (
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Op is one operation of a transaction (the engine's Client.Multi and
// Hold.Fenced): a create, a set, a delete or a version check of one node.
// Make one with Create, Set, Delete or Check; the zero Op is refused.
// Package recipes has its own Op, which converts through Request and Of.
type Op struct {
	kind    opKind
	path    string
	data    []byte
	flags   int32
	version int32
}

type opKind uint8

const (
	opNone opKind = iota
	opCreate
	opSet
	opDelete
	opCheck
)

func (k opKind) String() string {
	switch k {
	case opCreate:
		return "create"
	case opSet:
		return "set"
	case opDelete:
		return "delete"
	case opCheck:
		return "check"
	}
	return "zero op"
}

// Create creates the node path with data and flags (zk.FlagEphemeral,
// zk.FlagSequence, ...), with the ACL the client's provider gives for it.
func Create(path string, data []byte, flags int32) Op {
	return Op{kind: opCreate, path: path, data: data, flags: flags}
}

// Set writes data to the node path if its version is version (-1 for
// any).
func Set(path string, data []byte, version int32) Op {
	return Op{kind: opSet, path: path, data: data, version: version}
}

// Delete deletes the node path if its version is version (-1 for any).
func Delete(path string, version int32) Op {
	return Op{kind: opDelete, path: path, version: version}
}

// Check fails the transaction unless the node path exists and, when
// version is not -1, has that version.
func Check(path string, version int32) Op {
	return Op{kind: opCheck, path: path, version: version}
}

// String returns the op's kind and path, as errors name them.
func (o Op) String() string {
	if o.kind == opNone {
		return o.kind.String()
	}
	return o.kind.String() + " " + o.path
}

// request returns the go-zookeeper request for o, on o's path as it is;
// a create gets the ACL acl gives for that path (the client's provider).
func (o Op) request(acl func(path string) []zk.ACL) any {
	if o.kind == opCreate {
		return &zk.CreateRequest{Path: o.path, Data: o.data, Flags: o.flags, Acl: acl(o.path)}
	}
	return o.Request()
}

// Request returns the go-zookeeper request o stands for, on its path as
// it is and, for a create, with no ACL (the client's provider gives it
// when the transaction runs); nil for the zero Op. Of is its inverse.
func (o Op) Request() any {
	switch o.kind {
	case opCreate:
		return &zk.CreateRequest{Path: o.path, Data: o.data, Flags: o.flags}
	case opSet:
		return &zk.SetDataRequest{Path: o.path, Data: o.data, Version: o.version}
	case opDelete:
		return &zk.DeleteRequest{Path: o.path, Version: o.version}
	case opCheck:
		return &zk.CheckVersionRequest{Path: o.path, Version: o.version}
	}
	return nil
}

// Of returns the Op of a go-zookeeper request as Request returns it
// (*zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest or
// *zk.CheckVersionRequest); the zero Op for anything else.
func Of(req any) Op {
	switch r := req.(type) {
	case *zk.CreateRequest:
		return Create(r.Path, r.Data, r.Flags)
	case *zk.SetDataRequest:
		return Set(r.Path, r.Data, r.Version)
	case *zk.DeleteRequest:
		return Delete(r.Path, r.Version)
	case *zk.CheckVersionRequest:
		return Check(r.Path, r.Version)
	}
	return Op{}
}

// Requests returns the go-zookeeper requests for ops, refusing a zero Op;
// creates get the ACLs acl gives.
func Requests(what string, ops []Op, acl func(path string) []zk.ACL) ([]any, error) {
	reqs := make([]any, len(ops))
	for i, o := range ops {
		if reqs[i] = o.request(acl); reqs[i] == nil {
			return nil, zeroOp(what, i)
		}
	}
	return reqs, nil
}

func zeroOp(what string, i int) error {
	return fmt.Errorf("%w: %s op %d is the zero Op (make ops with CreateOp, SetOp, DeleteOp or CheckOp)", zkerr.ErrInvalidArgument, what, i)
}

// OnServer returns copies of ops, transaction operations on recipe paths,
// with ns applied to their paths. A zero Op or a bad path is refused,
// naming the op's index.
func OnServer(what string, ops []Op, ns zkpath.Namespace) ([]Op, error) {
	out := make([]Op, len(ops))
	for i, o := range ops {
		if o.kind == opNone {
			return nil, zeroOp(what, i)
		}
		full, err := ns.Writable(o.path)
		if o.kind == opCheck { // a read: the reserved tree may be checked
			full, err = ns.Full(o.path)
		}
		if err != nil {
			return nil, fmt.Errorf("%w (%s op %d)", err, what, i)
		}
		o.path = full
		out[i] = o
	}
	return out, nil
}

// Error names the op that failed a transaction: its kind and server
// path, with the error the server gave. ops are the transaction's ops on
// server paths, in order.
func Error(what string, ops []Op, res []zk.MultiResponse, err error) error {
	for i, r := range res {
		if r.Error != nil && i < len(ops) {
			return fmt.Errorf("zkrecipes: %s: %s: %w", what, ops[i], r.Error)
		}
	}
	return fmt.Errorf("zkrecipes: %s: %w", what, err)
}
