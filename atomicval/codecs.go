package atomicval

import "github.com/zkrecipes/zkrecipes/internal/codec"

// Curator's formats (package codec): a missing node, or empty data, reads
// as the zero value, as Curator's atomic values read it.
var (
	longFormat  = codec.Int64{What: "an atomic long", EmptyIsZero: true}    // DistributedAtomicLong: 8 bytes
	intFormat   = codec.Int32{What: "an atomic integer", EmptyIsZero: true} // DistributedAtomicInteger (SharedCount's): 4 bytes
	valueFormat = codec.Bytes{EmptyIsNil: true}                             // DistributedAtomicValue: the bytes
)
