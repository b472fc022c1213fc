package recipes

import "github.com/zkrecipes/zkrecipes/internal/engine"

// Op is one operation of a transaction run by Client.Multi or by a hold's
// Fenced (Hold): a create, a set, a delete or a version check of one node.
// Make it with CreateOp, SetOp, DeleteOp or CheckOp; the zero Op is
// refused with ErrInvalidArgument. Paths are recipe paths: the client's
// namespace is applied when the transaction runs, and a bad path is
// refused then. Its String method gives the kind and path ("set /a"), as
// errors name a failing op.
type Op = engine.Op

// CreateOp is an Op that creates the node path with data and flags (0,
// zk.FlagEphemeral, zk.FlagSequence, ...). The node gets the ACL the
// client's ACLProvider gives for its server path, as Client.Create does.
func CreateOp(path string, data []byte, flags int32) Op { return engine.CreateOp(path, data, flags) }

// SetOp is an Op that writes data to the node path if its version is
// version (-1 for any).
func SetOp(path string, data []byte, version int32) Op { return engine.SetOp(path, data, version) }

// DeleteOp is an Op that deletes the node path if its version is version
// (-1 for any).
func DeleteOp(path string, version int32) Op { return engine.DeleteOp(path, version) }

// CheckOp is an Op that fails the transaction unless the node path exists
// and, when version is not -1, has that version.
func CheckOp(path string, version int32) Op { return engine.CheckOp(path, version) }
