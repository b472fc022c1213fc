package recipes

import "fmt"

// FenceToken is the fencing token of a hold (Hold.Token): it orders every
// successive holder of a lock, semaphore lease or leadership, so that a
// resource can refuse a holder whose token is lower than one it has seen.
//
// Czxid is the creation zxid of the node that proves the hold. ZooKeeper
// gives every create a larger zxid, so it strictly increases across
// successive holders of the same path, even when the parent was deleted
// and recreated in between. Local orders the holders that share one node:
// a mutex with WithLocalHandoff passes its node between owners in one
// process, and numbers them 0, 1, 2, ...; it is 0 everywhere else.
//
// A store that keeps one number can keep Czxid when no lock uses local
// hand-offs; otherwise it keeps both and compares them with Compare.
type FenceToken struct {
	Czxid int64
	Local uint64
}

// Compare returns -1, 0 or +1 as t orders before, with or after o: by
// Czxid, then by Local.
func (t FenceToken) Compare(o FenceToken) int {
	switch {
	case t.Czxid < o.Czxid:
		return -1
	case t.Czxid > o.Czxid:
		return 1
	case t.Local < o.Local:
		return -1
	case t.Local > o.Local:
		return 1
	}
	return 0
}

// IsZero reports whether t is the zero token, which no hold has.
func (t FenceToken) IsZero() bool { return t == FenceToken{} }

// String formats the token as its czxid in hex, as ZooKeeper prints
// zxids ("0x1a"), followed by ".local" when Local is not 0 ("0x1a.2").
func (t FenceToken) String() string {
	if t.Local == 0 {
		return fmt.Sprintf("0x%x", t.Czxid)
	}
	return fmt.Sprintf("0x%x.%d", t.Czxid, t.Local)
}
