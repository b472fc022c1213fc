package discovery

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// typedGolden is, for one file GenGolden.java wrote, the payload as a
// typed Payload sets it and reads it back.
type typedGolden struct {
	set  func(*Instance) error        // Set of the value Java wrote
	get  func(*Instance) (any, error) // Get
	want any                          // the value Get returns
}

func golden[T any](class string, v T) typedGolden {
	p := Payload[T]{Class: class}
	return typedGolden{
		set:  func(in *Instance) error { return p.Set(in, v) },
		get:  func(in *Instance) (any, error) { return p.Get(in) },
		want: v,
	}
}

// TestTypedPayloadMatchesCurator: a Payload[T] writes, for each payload
// Curator 5.4 and 5.7.1 wrote (a class, Jackson's natural types, a Map, a
// List, a Long and an enum in the typed form [class, value], null), the
// same bytes, and reads each file back to the value; a Discovery typed on
// it decodes the payload once, at read, and Get returns that value.
func TestTypedPayloadMatchesCurator(t *testing.T) {
	cases := map[string]typedGolden{
		"typed":    golden("GenGolden$Details", details{"primary", 3, map[string]string{"zone": "eu-1"}}),
		"string":   golden(javaString, "hello \"w\" é\u2028<>&"),
		"controls": golden(javaString, "\x7f\x00"),
		"number":   golden(javaInteger, 42),
		"double":   golden(javaDouble, 2.5),
		"bool":     golden(javaBoolean, true),
		"map":      golden(JavaMap, map[string]any{"a": "x", "b": float64(7)}),
		"list":     golden(JavaList, []any{"x", float64(7)}),
		"long":     golden(javaLong, int64(5)),
		"enum":     golden("java.util.concurrent.TimeUnit", "SECONDS"),
		"nulls":    golden("GenGolden$Details", (*details)(nil)),
	}
	silent := slog.New(slog.NewTextHandler(io.Discard, nil))
	for name, c := range cases {
		for _, dir := range curatorDirs {
			want, err := os.ReadFile(filepath.Join(dir, name+".json"))
			require.NoError(t, err)
			inst, err := Decode(want)
			require.NoError(t, err, name)
			require.NoError(t, c.set(inst), name)
			got, err := inst.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "%s/%s", dir, name)

			v, err := c.get(inst)
			require.NoError(t, err, name)
			assert.Equal(t, c.want, v, "%s/%s read back", dir, name)
			if p, ok := c.want.(details); ok {
				d := &Discovery{typ: Payload[details]{Class: "GenGolden$Details"}, log: silent}
				read, err := d.decode(name, want)
				require.NoError(t, err)
				require.NotNil(t, read.typed, "decoded at read")
				assert.Equal(t, p, read.typed.v)
				v, err := c.get(read)
				require.NoError(t, err)
				assert.Equal(t, p, v)
				assert.Nil(t, read.Clone().typed, "a clone decodes again: its Payload may change")
			}
		}
	}
}

// TestPayloadForms: the class Jackson reads each bare form as, the typed
// scalars Java writes, and the errors.
func TestPayloadForms(t *testing.T) {
	for raw, class := range map[string]string{
		`"s"`: javaString, `false`: javaBoolean, `7`: javaInteger, `-2147483649`: javaLong,
		`3000000000`: javaLong, `99999999999999999999`: javaBigInteger, `2.5`: javaDouble, `1e3`: javaDouble,
		`{"a":1}`: JavaMap, `{"@class":"X","a":1}`: "X", `["java.lang.Long",5]`: javaLong, `null`: "",
	} {
		got, _, err := javaView([]byte(raw))
		require.NoError(t, err, raw)
		assert.Equal(t, class, got, raw)
	}
	for _, bad := range []string{`[1,2]`, `["a"]`, `{"@class":7}`} {
		_, _, err := javaView([]byte(bad))
		assert.Error(t, err, bad)
	}
	enc := func(raw []byte, err error) string { require.NoError(t, err); return string(raw) }
	assert.Equal(t, `["java.lang.Long",3000000000]`, enc(Payload[int64]{Class: javaLong}.encode(3000000000)), "Java writes every Long typed")
	assert.Equal(t, `2.0`, enc(Payload[float64]{Class: javaDouble}.encode(2)), "a Double is written with its point")
	assert.Equal(t, `["java.lang.Float",2.5]`, enc(Payload[float32]{Class: "java.lang.Float"}.encode(2.5)))
	assert.Equal(t, `{"@class":"X","a":1}`, enc(Payload[json.RawMessage]{Class: "X"}.encode(json.RawMessage(`{"@class":"X", "a":1}`))))
	_, err := Payload[json.RawMessage]{Class: "X"}.encode(json.RawMessage(`{"@class":"Y"}`))
	assert.Error(t, err, "an object of another class")

	// The untyped reads take the typed form of a scalar too.
	for _, dir := range curatorDirs {
		for file, want := range map[string]any{"long": int64(5), "enum": "SECONDS"} {
			b, err := os.ReadFile(filepath.Join(dir, file+".json"))
			require.NoError(t, err)
			inst, err := Decode(b)
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"long": javaLong, "enum": "java.util.concurrent.TimeUnit"}[file], inst.PayloadClass())
			got := reflect.New(reflect.TypeOf(want))
			require.NoError(t, inst.DecodePayload(got.Interface()))
			assert.Equal(t, want, got.Elem().Interface(), file)
		}
	}

	in := &Instance{ID: "i", Payload: json.RawMessage(`["java.lang.Long",5]`)}
	n, err := Payload[int64]{Class: javaLong}.Get(in)
	require.NoError(t, err)
	assert.Equal(t, int64(5), n)
	_, err = Payload[int]{Class: javaInteger}.Get(in)
	assert.ErrorIs(t, err, recipes.ErrCorrupt)
	in.Payload = json.RawMessage(`[1,2]`)
	_, err = Payload[[]int]{Class: JavaList}.Get(in)
	assert.ErrorIs(t, err, recipes.ErrCorrupt, "Jackson cannot read a list without its class either")
}

// BenchmarkPayloadGet: Get on an instance a typed Discovery read (decoded
// once, at read) against Get decoding the bytes.
func BenchmarkPayloadGet(b *testing.B) {
	p := Payload[details]{Class: "GenGolden$Details"}
	data, err := os.ReadFile(filepath.Join(curatorDirs[0], "typed.json"))
	require.NoError(b, err)
	d := &Discovery{typ: p, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	read, err := d.decode("typed", data)
	require.NoError(b, err)
	for name, in := range map[string]*Instance{"read-by-typed-discovery": read, "decoded-from-bytes": read.Clone()} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Get(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
