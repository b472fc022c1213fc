package discovery

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// The variables a URISpec expands from the instance itself (Curator's
// UriSpec.FIELD_* names).
const (
	FieldScheme              = "scheme"                // "https" when the instance has an SSL port, else "http"
	FieldName                = "name"                  // the service name
	FieldID                  = "id"                    // the instance id
	FieldAddress             = "address"               // the address
	FieldPort                = "port"                  // the port
	FieldSSLPort             = "ssl-port"              // the SSL port
	FieldRegistrationTimeUTC = "registration-time-utc" // registration time, epoch ms
	FieldServiceType         = "service-type"          // the service type, lower case ("dynamic")
)

// URIPart is one part of a URISpec: literal text, or the name of a
// variable when Variable is set.
type URIPart struct {
	Value    string
	Variable bool
}

// URISpec is Curator's UriSpec: a template such as
// "{scheme}://{address}:{port}" kept as its parts, which is how Curator
// writes it (an object {"parts":[...]}, never the template string).
type URISpec struct {
	Parts []URIPart
}

// ParseURISpec splits template into parts as Curator's UriSpec does:
// "{name}" is a variable (the blanks around its name trimmed, "{}" no part
// at all), anything else literal text. A "{" inside a variable, a "}"
// without its "{" and an unclosed "{" are errors wrapping
// recipes.ErrInvalidArgument.
func ParseURISpec(template string) (*URISpec, error) {
	u := &URISpec{Parts: []URIPart{}}
	var cur strings.Builder
	inVar := false
	flush := func(variable bool) {
		v := cur.String()
		cur.Reset()
		if variable {
			v = strings.TrimSpace(v)
		}
		if v != "" {
			u.Parts = append(u.Parts, URIPart{Value: v, Variable: variable})
		}
	}
	for _, r := range template {
		switch {
		case r == '{' && inVar:
			return nil, uriErr(template, "{ inside a variable")
		case r == '{':
			flush(false)
			inVar = true
		case r == '}' && !inVar:
			return nil, uriErr(template, "} without its {")
		case r == '}':
			flush(true)
			inVar = false
		default:
			cur.WriteRune(r)
		}
	}
	if inVar {
		return nil, uriErr(template, "a variable not closed with }")
	}
	flush(false)
	return u, nil
}

func uriErr(template, what string) error {
	return fmt.Errorf("%w: uri spec %q: %s", recipes.ErrInvalidArgument, template, what)
}

// MustParseURISpec is ParseURISpec for templates known to be valid; it
// panics on an error.
func MustParseURISpec(template string) *URISpec {
	u, err := ParseURISpec(template)
	if err != nil {
		panic(err)
	}
	return u
}

// String returns the template the parts come from.
func (u *URISpec) String() string {
	if u == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range u.Parts {
		if p.Variable {
			b.WriteString("{" + p.Value + "}")
		} else {
			b.WriteString(p.Value)
		}
	}
	return b.String()
}

// Build expands the spec for inst as Curator's UriSpec.build does: the
// Field variables from the instance, any other from vars (formatted with
// %v); a variable with no value (an instance without a port, a name not
// in vars) expands to nothing.
func (u *URISpec) Build(inst *Instance, vars map[string]any) string {
	if u == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range u.Parts {
		if !p.Variable {
			b.WriteString(p.Value)
			continue
		}
		if v, ok := inst.field(p.Value); ok {
			b.WriteString(v)
			continue
		}
		if v, ok := vars[p.Value]; ok && v != nil {
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// field returns the value of one of the Field variables.
func (i *Instance) field(name string) (string, bool) {
	if i == nil {
		return "", false
	}
	port := func(p int) string {
		if p == 0 {
			return ""
		}
		return strconv.Itoa(p)
	}
	switch name {
	case FieldScheme:
		if i.SSLPort != 0 {
			return "https", true
		}
		return "http", true
	case FieldName:
		return i.Name, true
	case FieldID:
		return i.ID, true
	case FieldAddress:
		return i.Address, true
	case FieldPort:
		return port(i.Port), true
	case FieldSSLPort:
		return port(i.SSLPort), true
	case FieldRegistrationTimeUTC:
		return strconv.FormatInt(i.RegistrationTimeUTC, 10), true
	case FieldServiceType:
		return strings.ToLower(string(i.ServiceType)), true
	}
	return "", false
}

var errURISpecForm = errors.New("uriSpec is neither an object with parts, a template string nor null")
