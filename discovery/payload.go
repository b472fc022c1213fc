package discovery

// Typed payloads: a Go type and the Java class it maps to, declared once.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Payload declares a typed payload: the Go type T of an instance's
// payload and the Java class it maps to, the class a Java service's
// ServiceDiscovery is typed on (Curator's JsonInstanceSerializer for
// that class). Declare it once:
//
//	var details = discovery.Payload[Details]{Class: "com.example.Details"}
//
// Set builds an instance's payload as Curator writes one of that class;
// Get reads an instance's payload as a T. Passed to New (WithPayload),
// it types the Discovery, its ServiceCaches and its Providers as
// Curator's typed ServiceDiscovery: they read only instances of the
// class, each decoded to T once (Get on them costs a type assertion),
// and skip the others as unreadable (logged at warn, counted by
// Discovery.Unreadable; QueryForInstance returns recipes.ErrCorrupt),
// where a Java reader typed on the class throws ClassCastException;
// Register and Update refuse a payload of another class.
//
// A payload's class is the one Jackson reads it as: an object's "@class"
// (java.util.LinkedHashMap without one), the type id of Jackson's typed
// form [class, value], and for a bare value Jackson's natural types:
// java.lang.String, java.lang.Boolean, java.lang.Integer (java.lang.Long,
// java.math.BigInteger when larger) and java.lang.Double. Classes are
// compared exactly (a Java reader takes a subclass too, which Go cannot
// know). A null payload is of every class, as Java's null, and reads as
// T's zero value.
type Payload[T any] struct {
	// Class is the Java class, as Class.getName spells it
	// ("com.example.Outer$Inner" for a nested class). It must be set.
	Class string
}

// The classes Jackson reads a bare JSON value as.
const (
	javaString     = "java.lang.String"
	javaBoolean    = "java.lang.Boolean"
	javaInteger    = "java.lang.Integer"
	javaLong       = "java.lang.Long"
	javaBigInteger = "java.math.BigInteger"
	javaDouble     = "java.lang.Double"
)

// typedValue is an instance's payload as a Discovery made WithPayload
// decoded it.
type typedValue struct {
	class string
	v     any
}

// payloadType is a Payload[T] without its T: what a Discovery keeps.
type payloadType interface {
	javaClass() string
	read(inst *Instance) error
}

// WithPayload types the Discovery on p (see Payload): its queries, its
// ServiceCaches and its Providers read only instances whose payload is
// of p's class (or null), each decoded to T once, and skip the others as
// unreadable, logged and counted; Register and Update refuse a payload of
// another class. A Payload without a Class is an error wrapping
// recipes.ErrInvalidArgument.
func WithPayload[T any](p Payload[T]) Option {
	return func(c *config) error {
		if err := p.check(); err != nil {
			return err
		}
		c.payload = p
		return nil
	}
}

func (p Payload[T]) check() error {
	if p.Class == "" {
		return fmt.Errorf("%w: payload of %T without its Java class", recipes.ErrInvalidArgument, *new(T))
	}
	return nil
}

func (p Payload[T]) javaClass() string { return p.Class }

// Set sets inst's payload to v written as Curator writes a payload of
// class p.Class: an object with "@class" first inside it, a list as
// Jackson's typed form [class,[...]], a String, Boolean, Integer or
// Double bare (Jackson's natural types), any other value [class,value];
// nil is null. An object that names another "@class" already, a value
// encoding/json cannot write and an empty Class are errors wrapping
// recipes.ErrInvalidArgument.
func (p Payload[T]) Set(inst *Instance, v T) error {
	if err := p.check(); err != nil {
		return err
	}
	if inst == nil {
		return fmt.Errorf("%w: nil instance", recipes.ErrInvalidArgument)
	}
	raw, err := p.encode(v)
	if err != nil {
		return fmt.Errorf("%w: instance %s payload: %w", recipes.ErrInvalidArgument, inst.ID, err)
	}
	inst.Payload, inst.typed = raw, nil
	return nil
}

func (p Payload[T]) encode(v T) (json.RawMessage, error) {
	var raw []byte
	if s, ok := any(v).(string); ok {
		raw = appendString(nil, s, false) // as Jackson escapes it
	} else {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		raw = bytes.TrimSpace(buf.Bytes())
	}
	cls := appendString(nil, p.Class, false)
	switch raw[0] {
	case 'n':
		return nil, nil
	case '{':
		var named struct {
			Class *string `json:"@class"`
		}
		if err := json.Unmarshal(raw, &named); err != nil {
			return nil, err
		}
		if named.Class != nil {
			if *named.Class != p.Class {
				return nil, fmt.Errorf("an object of class %q, not %q", *named.Class, p.Class)
			}
			return raw, nil // names its class already
		}
		out := append([]byte(`{"@class":`), cls...)
		if len(raw) > 2 {
			out = append(out, ',')
		}
		return append(out, raw[1:]...), nil
	case '[':
	default:
		natural := bareClass(raw)
		if p.Class == javaDouble && natural != javaString && natural != javaBoolean {
			natural = javaDouble
			if !bytes.ContainsAny(raw, ".eE") {
				raw = append(raw, ".0"...) // as Java writes a double
			}
		}
		if natural == p.Class && natural != javaLong && natural != javaBigInteger {
			return raw, nil // Jackson's natural types go bare
		}
	}
	out := append(append([]byte{'['}, cls...), ',')
	out = append(out, raw...)
	return append(out, ']'), nil
}

// Get returns inst's payload as a T. An instance read by a Discovery
// made WithPayload(p) holds it decoded already (shared with every reader
// of that instance, as the instance is: do not modify what it refers
// to); any other is decoded from its Payload. A payload of another class
// or one that does not decode into T is an error wrapping
// recipes.ErrCorrupt; a null payload is T's zero value. A nil instance or
// an empty Class is an error wrapping recipes.ErrInvalidArgument.
func (p Payload[T]) Get(inst *Instance) (T, error) {
	var zero T
	if err := p.check(); err != nil {
		return zero, err
	}
	if inst == nil {
		return zero, fmt.Errorf("%w: nil instance", recipes.ErrInvalidArgument)
	}
	if tv := inst.typed; tv != nil && tv.class == p.Class {
		if v, ok := tv.v.(T); ok {
			return v, nil
		}
	}
	return p.decode(inst)
}

func (p Payload[T]) decode(inst *Instance) (T, error) {
	var v T
	cls, value, err := javaView(inst.Payload)
	switch {
	case err != nil:
		return v, fmt.Errorf("%w: service instance %s payload: %w", recipes.ErrCorrupt, inst.ID, err)
	case cls == "":
		return v, nil // null
	case cls != p.Class:
		return v, fmt.Errorf("%w: service instance %s: payload class %q, not %q", recipes.ErrCorrupt, inst.ID, cls, p.Class)
	}
	if err := json.Unmarshal(value, &v); err != nil {
		return v, fmt.Errorf("%w: service instance %s payload as %s: %w", recipes.ErrCorrupt, inst.ID, p.Class, err)
	}
	return v, nil
}

// read decodes inst's payload for a Discovery typed on p, keeping the
// value on inst for Get.
func (p Payload[T]) read(inst *Instance) error {
	v, err := p.decode(inst)
	if err != nil {
		return err
	}
	inst.typed = &typedValue{class: p.Class, v: v}
	return nil
}

// javaView returns the class Jackson reads a payload as (see Payload)
// and the payload's value without its type information; "" for null.
func javaView(raw []byte) (string, []byte, error) {
	p := bytes.TrimSpace(raw)
	if len(p) == 0 || string(p) == "null" {
		return "", nil, nil
	}
	switch p[0] {
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(p, &m); err != nil {
			return "", nil, err
		}
		c, ok := m["@class"]
		if !ok {
			return JavaMap, p, nil
		}
		var cls string
		if err := json.Unmarshal(c, &cls); err != nil {
			return "", nil, fmt.Errorf("@class: %w", err)
		}
		delete(m, "@class")
		v, err := json.Marshal(m)
		return cls, v, err
	case '[':
		cls, v, ok := typedArray(p)
		if !ok {
			return "", nil, errors.New("an array that is not Jackson's typed form [class, value]")
		}
		return cls, v, nil
	}
	return bareClass(p), p, nil
}

// bareClass returns the class Jackson reads a bare string, boolean or
// number as.
func bareClass(p []byte) string {
	switch p[0] {
	case '"':
		return javaString
	case 't', 'f':
		return javaBoolean
	}
	if bytes.ContainsAny(p, ".eE") {
		return javaDouble
	}
	n, err := strconv.ParseInt(string(p), 10, 64)
	switch {
	case err != nil:
		return javaBigInteger
	case n >= math.MinInt32 && n <= math.MaxInt32:
		return javaInteger
	}
	return javaLong
}
