package atomicval

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// longCodec is Curator's DistributedAtomicLong format: 8 bytes,
// big-endian.
type longCodec struct{}

func (longCodec) encode(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func (longCodec) decode(b []byte) (int64, error) {
	switch len(b) {
	case 0:
		return 0, nil
	case 8:
		return int64(binary.BigEndian.Uint64(b)), nil
	}
	return 0, corrupt("an atomic long", 8, b)
}

func (longCodec) equal(a, b int64) bool { return a == b }
func (longCodec) show(v int64) string   { return strconv.FormatInt(v, 10) }

// intCodec is Curator's DistributedAtomicInteger and SharedCount format: 4
// bytes, big-endian.
type intCodec struct{}

func (intCodec) encode(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func (intCodec) decode(b []byte) (int32, error) {
	switch len(b) {
	case 0:
		return 0, nil
	case 4:
		return int32(binary.BigEndian.Uint32(b)), nil
	}
	return 0, corrupt("an atomic integer", 4, b)
}

func (intCodec) equal(a, b int32) bool { return a == b }
func (intCodec) show(v int32) string   { return strconv.FormatInt(int64(v), 10) }

// bytesCodec is DistributedAtomicValue's: the bytes as they are. An empty
// node and a missing one read as nil.
type bytesCodec struct{}

func (bytesCodec) encode(v []byte) []byte { return bytes.Clone(v) }

func (bytesCodec) decode(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, nil
	}
	return bytes.Clone(b), nil
}

func (bytesCodec) equal(a, b []byte) bool { return bytes.Equal(a, b) }

// show quotes printable UTF-8 text (as the value is, when it is text:
// "60s"), and shows other bytes in hex; either cut at 16 bytes.
func (bytesCodec) show(v []byte) string {
	cut, more := v, ""
	if len(v) > 16 {
		cut, more = v[:16], "..."
	}
	if utf8.Valid(v) && !slices.ContainsFunc([]rune(string(cut)), func(r rune) bool { return !unicode.IsPrint(r) }) {
		return fmt.Sprintf("%q%s", cut, more)
	}
	return fmt.Sprintf("%d bytes %x%s", len(v), cut, more)
}

// corrupt is the error of data of the wrong length.
func corrupt(what string, want int, b []byte) error {
	head := b
	if len(head) > 16 {
		head = head[:16]
	}
	return fmt.Errorf("%w: %s is %d bytes (or empty), the node holds %d ([% x])", recipes.ErrCorrupt, what, want, len(b), head)
}
