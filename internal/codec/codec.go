// Package codec is the one way the value recipes (package shared, package
// atomicval) turn their values into node data and back, with Curator's
// formats: a 4-byte big-endian integer (SharedCount,
// DistributedAtomicInteger), an 8-byte one (DistributedAtomicLong), and
// bytes as they are (SharedValue, DistributedAtomicValue).
package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Codec turns a recipe's values into node data and back.
type Codec[T any] interface {
	// Encode gives the node data of v, or an error wrapping
	// recipes.ErrInvalidArgument for a value the format cannot hold.
	Encode(v T) ([]byte, error)
	// Decode reads node data, or fails with an error wrapping
	// recipes.ErrCorrupt.
	Decode(b []byte) (T, error)
	Equal(a, b T) bool
	Clone(v T) T
	// Show formats v for an error message.
	Show(v T) string
}

// Int32 is Curator's 4-byte big-endian integer. What names the value in
// errors ("a shared count"); with EmptyIsZero, empty data (a missing
// node) reads as 0, as Curator's atomic values read it.
type Int32 struct {
	What        string
	EmptyIsZero bool
}

func (c Int32) Encode(v int32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(nil, uint32(v)), nil
}

func (c Int32) Decode(b []byte) (int32, error) {
	switch {
	case len(b) == 4:
		return int32(binary.BigEndian.Uint32(b)), nil
	case len(b) == 0 && c.EmptyIsZero:
		return 0, nil
	}
	return 0, corrupt(c.What, 4, c.EmptyIsZero, b)
}

func (Int32) Equal(a, b int32) bool { return a == b }
func (Int32) Clone(v int32) int32   { return v }
func (Int32) Show(v int32) string   { return strconv.FormatInt(int64(v), 10) }

// Int64 is Curator's 8-byte big-endian integer (as Int32).
type Int64 struct {
	What        string
	EmptyIsZero bool
}

func (c Int64) Encode(v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(v)), nil
}

func (c Int64) Decode(b []byte) (int64, error) {
	switch {
	case len(b) == 8:
		return int64(binary.BigEndian.Uint64(b)), nil
	case len(b) == 0 && c.EmptyIsZero:
		return 0, nil
	}
	return 0, corrupt(c.What, 8, c.EmptyIsZero, b)
}

func (Int64) Equal(a, b int64) bool { return a == b }
func (Int64) Clone(v int64) int64   { return v }
func (Int64) Show(v int64) string   { return strconv.FormatInt(v, 10) }

// Int is Int32 for a Go int: a value outside 32 bits is refused
// (shared.Count's).
type Int struct{ Int32 }

func (c Int) Encode(v int) ([]byte, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %s %d does not fit in 32 bits", recipes.ErrInvalidArgument, c.What, v)
	}
	return c.Int32.Encode(int32(v))
}

func (c Int) Decode(b []byte) (int, error) {
	v, err := c.Int32.Decode(b)
	return int(v), err
}

func (Int) Equal(a, b int) bool { return a == b }
func (Int) Clone(v int) int     { return v }
func (Int) Show(v int) string   { return strconv.Itoa(v) }

// Bytes is the bytes as they are; with EmptyIsNil, empty data reads as
// nil (an atomic value's missing node).
type Bytes struct{ EmptyIsNil bool }

func (Bytes) Encode(v []byte) ([]byte, error) { return bytes.Clone(v), nil }

func (c Bytes) Decode(b []byte) ([]byte, error) {
	if len(b) == 0 && c.EmptyIsNil {
		return nil, nil
	}
	return bytes.Clone(b), nil
}

func (Bytes) Equal(a, b []byte) bool { return bytes.Equal(a, b) }
func (Bytes) Clone(v []byte) []byte  { return bytes.Clone(v) }

// Show quotes printable UTF-8 text (as the value is, when it is text:
// "60s"), and shows other bytes in hex; either cut at 16 bytes.
func (Bytes) Show(v []byte) string {
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
func corrupt(what string, want int, orEmpty bool, b []byte) error {
	head := b
	if len(head) > 16 {
		head = head[:16]
	}
	empty := ""
	if orEmpty {
		empty = " (or empty)"
	}
	return fmt.Errorf("%w: %s is %d bytes%s, the node holds %d ([% x])", recipes.ErrCorrupt, what, want, empty, len(b), head)
}
