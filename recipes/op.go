package recipes

import "github.com/zkrecipes/zkrecipes/internal/zkop"

// Op is one operation of a transaction run by Client.Multi or by a hold's
// Fenced (Hold): a create, a set, a delete or a version check of one node.
// Make it with CreateOp, SetOp, DeleteOp or CheckOp; the zero Op is
// refused with ErrInvalidArgument. Paths are recipe paths: the client's
// namespace is applied when the transaction runs, and a bad path is
// refused then. Its String method gives the kind and path ("set /a"), as
// errors name a failing op.
type Op struct{ e zkop.Op }

// CreateOp is an Op that creates the node path with data and flags (0,
// zk.FlagEphemeral, zk.FlagSequence, ...). The node gets the ACL the
// client's ACLProvider gives for its server path, as Client.Create does.
func CreateOp(path string, data []byte, flags int32) Op {
	return Op{zkop.Create(path, data, flags)}
}

// SetOp is an Op that writes data to the node path if its version is
// version (-1 for any).
func SetOp(path string, data []byte, version int32) Op { return Op{zkop.Set(path, data, version)} }

// DeleteOp is an Op that deletes the node path if its version is version
// (-1 for any).
func DeleteOp(path string, version int32) Op { return Op{zkop.Delete(path, version)} }

// CheckOp is an Op that fails the transaction unless the node path exists
// and, when version is not -1, has that version.
func CheckOp(path string, version int32) Op { return Op{zkop.Check(path, version)} }

// String returns the op's kind and path ("set /a"; "zero op").
func (o Op) String() string { return o.e.String() }

// Request returns the go-zookeeper request the op stands for
// (*zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest or
// *zk.CheckVersionRequest; nil for the zero Op), on its path as given,
// without the client's namespace, and for a create without an ACL (the
// client's ACLProvider gives it when the transaction runs).
func (o Op) Request() any { return o.e.Request() }

// engineOps returns the engine's ops for ops.
func engineOps(ops []Op) []zkop.Op {
	out := make([]zkop.Op, len(ops))
	for i, o := range ops {
		out[i] = o.e
	}
	return out
}
