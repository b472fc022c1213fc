package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// ServiceType is how an instance's node is kept (Curator's ServiceType).
type ServiceType string

// The service types: the enum names Curator writes.
const (
	// Dynamic is an ephemeral node: the instance goes with its session
	// (the default).
	Dynamic ServiceType = "DYNAMIC"
	// DynamicSequential is an ephemeral sequential node named id plus the
	// server's sequence number.
	DynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
	// Static is a persistent node, deleted by Unregister and Close.
	Static ServiceType = "STATIC"
	// Permanent is a persistent node that outlives its registration:
	// Unregister deletes it, Close leaves it (Curator deletes it on close
	// too: CURATOR-94).
	Permanent ServiceType = "PERMANENT"
)

// Instance is one instance of a service, as curator-x-discovery's
// ServiceInstance. Its JSON (MarshalJSON) is the bytes Curator's
// JsonInstanceSerializer writes, field for field and in its order: name,
// id, address, port, sslPort, payload, registrationTimeUTC, serviceType,
// uriSpec, then enabled only when Enabled is set (Curator's default
// "compatible" serializer omits it, and readers before Curator 4.0 reject
// it).
//
// Use MarshalJSON itself for Curator's bytes: json.Marshal escapes '<',
// '>', '&', U+2028 and U+2029 in its result (the same JSON, other bytes).
//
// Java's nulls are Go's zero values: an empty Address, a zero Port or
// SSLPort, a nil Payload and a nil URISpec are written as null, and null
// reads as them.
type Instance struct {
	// Name is the service's name (the node under the base path).
	Name string
	// ID is the instance's id (its node's name; for DynamicSequential the
	// node's name is ID plus the sequence number).
	ID string
	// Address is the host or IP address ("" is null).
	Address string
	// Port is the port (0 is null).
	Port int
	// SSLPort is the SSL port (0 is null).
	SSLPort int
	// Payload is the payload's JSON exactly as written and read: nil is
	// null. A Payload[T] declaration sets it from a T and reads it back
	// (Set, Get); EncodePayload makes one a Java reader accepts (an object
	// with its "@class" inside), DecodePayload reads one.
	Payload json.RawMessage
	// RegistrationTimeUTC is the registration time, epoch milliseconds
	// (Register sets it when it is 0).
	RegistrationTimeUTC int64
	// ServiceType is how the node is kept ("" reads as Dynamic).
	ServiceType ServiceType
	// URISpec is the URI template (nil is null).
	URISpec *URISpec
	// Enabled is written only when set; nil reads as enabled (Curator 4.0
	// and later read a missing "enabled" as true).
	Enabled *bool

	typed *typedValue // Payload decoded by a Discovery made WithPayload
}

// IsEnabled reports whether the instance is enabled: Enabled unset or true.
func (i *Instance) IsEnabled() bool { return i.Enabled == nil || *i.Enabled }

// BuildURI expands the instance's URISpec (see URISpec.Build); "" when it
// has none.
func (i *Instance) BuildURI(vars map[string]any) string { return i.URISpec.Build(i, vars) }

// Clone returns a deep copy.
func (i *Instance) Clone() *Instance {
	if i == nil {
		return nil
	}
	c := *i
	c.typed = nil // the copy's Payload may change
	if i.Payload != nil {
		c.Payload = append(json.RawMessage(nil), i.Payload...)
	}
	if i.URISpec != nil {
		c.URISpec = &URISpec{Parts: append([]URIPart{}, i.URISpec.Parts...)}
	}
	if i.Enabled != nil {
		e := *i.Enabled
		c.Enabled = &e
	}
	return &c
}

// MarshalJSON writes the instance as Curator does (see Instance). A
// Payload that is not valid JSON is an error wrapping
// recipes.ErrInvalidArgument.
func (i *Instance) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"name":`...)
	b = appendString(b, i.Name, false)
	b = append(b, `,"id":`...)
	b = appendString(b, i.ID, false)
	b = append(b, `,"address":`...)
	b = appendString(b, i.Address, true)
	b = append(b, `,"port":`...)
	b = appendPort(b, i.Port)
	b = append(b, `,"sslPort":`...)
	b = appendPort(b, i.SSLPort)
	b = append(b, `,"payload":`...)
	if len(bytes.TrimSpace(i.Payload)) == 0 {
		b = append(b, "null"...)
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, i.Payload); err != nil {
			return nil, fmt.Errorf("%w: instance %s payload: %w", recipes.ErrInvalidArgument, i.ID, err)
		}
		b = append(b, buf.Bytes()...)
	}
	b = append(b, `,"registrationTimeUTC":`...)
	b = strconv.AppendInt(b, i.RegistrationTimeUTC, 10)
	b = append(b, `,"serviceType":`...)
	st := i.ServiceType
	if st == "" {
		st = Dynamic
	}
	b = appendString(b, string(st), false)
	b = append(b, `,"uriSpec":`...)
	if i.URISpec == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"parts":[`...)
		for k, p := range i.URISpec.Parts {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"value":`...)
			b = appendString(b, p.Value, false)
			b = append(b, `,"variable":`...)
			b = strconv.AppendBool(b, p.Variable)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	if i.Enabled != nil {
		b = append(b, `,"enabled":`...)
		b = strconv.AppendBool(b, *i.Enabled)
	}
	return append(b, '}'), nil
}

func appendPort(b []byte, p int) []byte {
	if p == 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(p), 10)
}

// appendString writes s as Jackson does: '"' and '\\' escaped, the control
// characters below 0x20 as \b \t \n \f \r or \u00XX (upper-case hex),
// everything else (U+2028, '<', '/') as it is; invalid UTF-8 as U+FFFD.
// An empty s is null when nullable.
func appendString(b []byte, s string, nullable bool) []byte {
	if s == "" && nullable {
		return append(b, "null"...)
	}
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\b':
			b = append(b, `\b`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\f':
			b = append(b, `\f`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
		case r == utf8.RuneError && n == 1:
			b = utf8.AppendRune(b, utf8.RuneError)
		default:
			b = append(b, s[:n]...)
		}
		s = s[n:]
	}
	return append(b, '"')
}

// wireInstance is what UnmarshalJSON reads: every field Curator, Spring
// Cloud Zookeeper and Dubbo write, nullable; unknown fields are ignored.
type wireInstance struct {
	Name                *string         `json:"name"`
	ID                  *string         `json:"id"`
	Address             *string         `json:"address"`
	Port                *int            `json:"port"`
	SSLPort             *int            `json:"sslPort"`
	Payload             json.RawMessage `json:"payload"`
	RegistrationTimeUTC *int64          `json:"registrationTimeUTC"`
	ServiceType         *string         `json:"serviceType"`
	URISpec             json.RawMessage `json:"uriSpec"`
	Enabled             *bool           `json:"enabled"`
}

// UnmarshalJSON reads an instance in any form Curator (every version),
// Spring Cloud Zookeeper and Dubbo write, and ignores unknown fields.
// "uriSpec" may be the parts object, a template string (as some Go ports
// write it) or null. Malformed JSON is an error wrapping
// recipes.ErrCorrupt.
func (i *Instance) UnmarshalJSON(data []byte) error {
	var w wireInstance
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("%w: service instance: %w", recipes.ErrCorrupt, err)
	}
	*i = Instance{}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	i.Name, i.ID, i.Address = str(w.Name), str(w.ID), str(w.Address)
	if w.Port != nil {
		i.Port = *w.Port
	}
	if w.SSLPort != nil {
		i.SSLPort = *w.SSLPort
	}
	if p := bytes.TrimSpace(w.Payload); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		i.Payload = append(json.RawMessage(nil), p...)
	}
	if w.RegistrationTimeUTC != nil {
		i.RegistrationTimeUTC = *w.RegistrationTimeUTC
	}
	i.ServiceType = ServiceType(str(w.ServiceType))
	if i.ServiceType == "" {
		i.ServiceType = Dynamic
	}
	i.Enabled = w.Enabled
	u := bytes.TrimSpace(w.URISpec)
	switch {
	case len(u) == 0 || bytes.Equal(u, []byte("null")):
	case u[0] == '"':
		var t string
		if err := json.Unmarshal(u, &t); err != nil {
			return fmt.Errorf("%w: service instance %s: uriSpec: %w", recipes.ErrCorrupt, i.ID, err)
		}
		spec, err := ParseURISpec(t)
		if err != nil {
			return fmt.Errorf("%w: service instance %s: %w", recipes.ErrCorrupt, i.ID, err)
		}
		i.URISpec = spec
	case u[0] == '{':
		var spec struct {
			Parts []struct {
				Value    string `json:"value"`
				Variable bool   `json:"variable"`
			} `json:"parts"`
		}
		if err := json.Unmarshal(u, &spec); err != nil {
			return fmt.Errorf("%w: service instance %s: uriSpec: %w", recipes.ErrCorrupt, i.ID, err)
		}
		i.URISpec = &URISpec{Parts: make([]URIPart, 0, len(spec.Parts))}
		for _, p := range spec.Parts {
			i.URISpec.Parts = append(i.URISpec.Parts, URIPart{Value: p.Value, Variable: p.Variable})
		}
	default:
		return fmt.Errorf("%w: service instance %s: %w", recipes.ErrCorrupt, i.ID, errURISpecForm)
	}
	return nil
}

// Decode reads an instance's node data (see Instance.UnmarshalJSON). An
// error wraps recipes.ErrCorrupt.
func Decode(data []byte) (*Instance, error) {
	i := new(Instance)
	if err := i.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return i, nil
}

// Java type ids for payloads that carry no class of their own.
const (
	// JavaMap is the class EncodePayload names inside an object payload
	// when none is given: what Curator writes for a Map payload, which an
	// untyped (Object) Java reader reads as a Map.
	JavaMap = "java.util.LinkedHashMap"
	// JavaList is the class of an array payload: Jackson writes a Java
	// List as ["java.util.ArrayList",[...]].
	JavaList = "java.util.ArrayList"
)

// EncodePayload returns v as a payload a Java reader of
// curator-x-discovery accepts: an object carries "@class":javaClass as
// its first field INSIDE the payload (a Java ServiceDiscovery typed on
// that class throws ClassCastException without it; JavaMap when
// javaClass is ""), an array is Jackson's typed form [javaClass or
// JavaList, [...]], and strings, numbers, booleans and nil are written
// bare. v may be a json.RawMessage. An error wraps
// recipes.ErrInvalidArgument.
func EncodePayload(v any, javaClass string) (json.RawMessage, error) {
	var raw []byte
	switch r := v.(type) {
	case json.RawMessage:
		raw = r
	case string:
		return appendString(nil, r, false), nil // as Jackson escapes it
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("%w: payload: %w", recipes.ErrInvalidArgument, err)
		}
		raw = buf.Bytes()
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%w: payload: %w", recipes.ErrInvalidArgument, err)
	}
	raw = buf.Bytes()
	switch raw[0] {
	case '{':
		if javaClass == "" {
			javaClass = JavaMap
		}
		var hasClass struct {
			Class *string `json:"@class"`
		}
		if err := json.Unmarshal(raw, &hasClass); err == nil && hasClass.Class != nil {
			return raw, nil // already typed
		}
		out := append([]byte(`{"@class":`), appendString(nil, javaClass, false)...)
		if len(raw) > 2 {
			out = append(out, ',')
		}
		return append(out, raw[1:]...), nil
	case '[':
		if javaClass == "" {
			javaClass = JavaList
		}
		out := append([]byte{'['}, appendString(nil, javaClass, false)...)
		out = append(out, ',')
		out = append(out, raw...)
		return append(out, ']'), nil
	case 'n':
		return nil, nil
	}
	return raw, nil
}

// PayloadClass returns the Java class a payload names: an object's
// "@class", or the type id of Jackson's typed form ["class",value] (a
// list, a Long, an enum); "" for none.
func (i *Instance) PayloadClass() string {
	p := bytes.TrimSpace(i.Payload)
	if len(p) == 0 {
		return ""
	}
	switch p[0] {
	case '{':
		var c struct {
			Class string `json:"@class"`
		}
		_ = json.Unmarshal(p, &c)
		return c.Class
	case '[':
		if cls, _, ok := typedArray(p); ok {
			return cls
		}
	}
	return ""
}

// typedArray splits Jackson's typed form ["class",value]: a list
// (["java.util.ArrayList",[...]]) or a value of no natural JSON type
// (["java.lang.Long",5], an enum's ["com.example.Color","RED"]).
func typedArray(p []byte) (string, json.RawMessage, bool) {
	var a []json.RawMessage
	if json.Unmarshal(p, &a) != nil || len(a) != 2 {
		return "", nil, false
	}
	var cls string
	if json.Unmarshal(a[0], &cls) != nil {
		return "", nil, false
	}
	return cls, a[1], true
}

// DecodePayload decodes the payload into v (as json.Unmarshal) without
// its Java type information: an object's "@class" is left out, Jackson's
// typed form ["class",value] is read as its value (a list, a number, an
// enum's name). A
// null payload leaves v as it is. An error wraps recipes.ErrCorrupt.
func (i *Instance) DecodePayload(v any) error {
	p := bytes.TrimSpace(i.Payload)
	if len(p) == 0 {
		return nil
	}
	switch p[0] {
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(p, &m); err != nil {
			return fmt.Errorf("%w: service instance %s payload: %w", recipes.ErrCorrupt, i.ID, err)
		}
		if _, ok := m["@class"]; ok {
			delete(m, "@class")
			var err error
			if p, err = json.Marshal(m); err != nil {
				return fmt.Errorf("%w: service instance %s payload: %w", recipes.ErrCorrupt, i.ID, err)
			}
		}
	case '[':
		if _, list, ok := typedArray(p); ok {
			p = list
		}
	}
	if err := json.Unmarshal(p, v); err != nil {
		return fmt.Errorf("%w: service instance %s payload: %w", recipes.ErrCorrupt, i.ID, err)
	}
	return nil
}
