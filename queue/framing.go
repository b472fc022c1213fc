package queue

import (
	"encoding/binary"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Curator's ItemSerializer framing of a DistributedQueue node's data: a
// version word, then each item as an opcode, a length and the bytes, then
// an end opcode; every integer big-endian.
const (
	frameVersion = 0x00010001
	frameItem    = 0x01
	frameEOF     = 0x02
)

// Encode returns the data of one queue node holding items, framed as
// Curator's DistributedQueue frames it (its ItemSerializer): the int32
// 0x00010001, then for each item the byte 0x01, its length as an int32
// and its bytes, then the byte 0x02, every integer big-endian. Put and
// PutMulti write this; it is exported for tools that write or read queue
// nodes themselves.
func Encode(items [][]byte) []byte {
	n := 5
	for _, it := range items {
		n += 5 + len(it)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, frameVersion)
	for _, it := range items {
		b = append(b, frameItem)
		b = binary.BigEndian.AppendUint32(b, uint32(len(it)))
		b = append(b, it...)
	}
	return append(b, frameEOF)
}

// Decode reads the items of a queue node's data framed as Encode frames
// them. Data that is not (a wrong version, a bad opcode or length, data
// cut short) returns an error wrapping recipes.ErrCorrupt. Bytes after
// the end opcode are ignored, as Curator ignores them.
func Decode(data []byte) ([][]byte, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, too short for a queue item", recipes.ErrCorrupt, len(data))
	}
	if v := binary.BigEndian.Uint32(data); v != frameVersion {
		return nil, fmt.Errorf("%w: queue item version 0x%08x, want 0x%08x", recipes.ErrCorrupt, v, frameVersion)
	}
	data = data[4:]
	var items [][]byte
	for {
		if len(data) < 1 {
			return nil, fmt.Errorf("%w: queue item ends without its end opcode", recipes.ErrCorrupt)
		}
		op := data[0]
		data = data[1:]
		switch op {
		case frameEOF:
			return items, nil
		case frameItem:
		default:
			return nil, fmt.Errorf("%w: queue item opcode %d", recipes.ErrCorrupt, op)
		}
		if len(data) < 4 {
			return nil, fmt.Errorf("%w: queue item cut short in a length", recipes.ErrCorrupt)
		}
		size := int32(binary.BigEndian.Uint32(data))
		data = data[4:]
		if size < 0 || int(size) > len(data) {
			return nil, fmt.Errorf("%w: queue item length %d with %d bytes left", recipes.ErrCorrupt, size, len(data))
		}
		items = append(items, append([]byte{}, data[:size]...))
		data = data[size:]
	}
}
