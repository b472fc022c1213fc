package nodes

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Mode is a create mode, as ZooKeeper's CreateMode (the values are
// go-zookeeper's create flags).
type Mode int32

// The create modes.
const (
	// Persistent is a node that stays until deleted.
	Persistent Mode = zk.FlagPersistent
	// Ephemeral is a node that goes with the session that made it.
	Ephemeral Mode = zk.FlagEphemeral
	// PersistentSequential is Persistent with a 10-digit sequence
	// appended to the name by the server.
	PersistentSequential Mode = zk.FlagSequence
	// EphemeralSequential is Ephemeral with a sequence.
	EphemeralSequential Mode = zk.FlagEphemeralSequential
	// Container is a node the server deletes once it has had children and
	// has none left (ZooKeeper 3.5.3 or later).
	Container Mode = zk.FlagContainer
	// PersistentWithTTL is a persistent node the server deletes once it
	// has had no children and no change for its TTL (ZooKeeper 3.5.3 or
	// later, with -Dzookeeper.extendedTypesEnabled=true).
	PersistentWithTTL Mode = zk.FlagTTL
	// PersistentSequentialWithTTL is PersistentWithTTL with a sequence.
	PersistentSequentialWithTTL Mode = zk.FlagPersistentSequentialWithTTL
)

// String returns ZooKeeper's name of the mode (PERSISTENT_WITH_TTL, say).
func (m Mode) String() string {
	switch m {
	case Persistent:
		return "PERSISTENT"
	case Ephemeral:
		return "EPHEMERAL"
	case PersistentSequential:
		return "PERSISTENT_SEQUENTIAL"
	case EphemeralSequential:
		return "EPHEMERAL_SEQUENTIAL"
	case Container:
		return "CONTAINER"
	case PersistentWithTTL:
		return "PERSISTENT_WITH_TTL"
	case PersistentSequentialWithTTL:
		return "PERSISTENT_SEQUENTIAL_WITH_TTL"
	}
	return fmt.Sprintf("Mode(%d)", int32(m))
}

// IsTTL reports whether the mode is a TTL mode.
func (m Mode) IsTTL() bool { return m == PersistentWithTTL || m == PersistentSequentialWithTTL }

// IsSequential reports whether the server appends a sequence to the name.
func (m Mode) IsSequential() bool {
	return m == PersistentSequential || m == EphemeralSequential || m == PersistentSequentialWithTTL
}

// IsEphemeral reports whether the node goes with its session.
func (m Mode) IsEphemeral() bool { return m == Ephemeral || m == EphemeralSequential }

func (m Mode) valid() bool { return m >= Persistent && m <= PersistentSequentialWithTTL }
