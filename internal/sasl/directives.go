package sasl

import (
	"errors"
	"fmt"
	"strings"
)

// directives are the name=value pairs of a DIGEST-MD5 challenge or
// response-auth (RFC 2831 7.1's #rule: comma-separated, optional white
// space, values a token or a quoted-string with backslash escapes). A
// name may come more than once (realm).
type directives map[string][]string

// one returns the first value of name, "" when absent.
func (d directives) one(name string) string {
	if v := d[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// all returns every value of name.
func (d directives) all(name string) []string { return d[name] }

// list returns the comma-separated elements of name's first value (qop,
// cipher), trimmed.
func (d directives) list(name string) []string {
	v := d.one(name)
	if v == "" {
		return nil
	}
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// parseDirectives parses s; names are lower-cased.
func parseDirectives(s string) (directives, error) {
	d := directives{}
	for i := 0; ; {
		i = skipSpaceComma(s, i)
		if i >= len(s) {
			return d, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq <= 0 {
			return nil, fmt.Errorf("malformed directive at %q", s[i:])
		}
		name := strings.ToLower(strings.TrimSpace(s[i : i+eq]))
		i += eq + 1
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		var val string
		var err error
		if i < len(s) && s[i] == '"' {
			val, i, err = quotedString(s, i+1)
			if err != nil {
				return nil, err
			}
		} else {
			end := strings.IndexByte(s[i:], ',')
			if end < 0 {
				end = len(s) - i
			}
			val, i = strings.TrimSpace(s[i:i+end]), i+end
		}
		d[name] = append(d[name], val)
		if i < len(s) && s[i] != ',' && s[i] != ' ' && s[i] != '\t' {
			return nil, fmt.Errorf("malformed directive %s: text after its value", name)
		}
	}
}

func skipSpaceComma(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == ',' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// quotedString reads a quoted-string's contents from s[i:] (after the
// opening quote) and returns them and the index after the closing quote.
func quotedString(s string, i int) (string, int, error) {
	var b strings.Builder
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			i++
			if i == len(s) {
				return "", 0, errors.New("unterminated quoted string")
			}
			b.WriteByte(s[i])
		case '"':
			return b.String(), i + 1, nil
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("unterminated quoted string")
}

// quote writes s as a quoted-string.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
