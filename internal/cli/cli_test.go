package cli

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

func parse(t *testing.T, env string, args ...string) (*Operator, error) {
	t.Helper()
	var o Operator
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return &o, o.Resolve(func(k string) string {
		if k == EnvServers {
			return env
		}
		return ""
	})
}

// TestResolve checks the operator flags after parsing: servers from the
// flag or else $ZK_SERVERS, and usage errors for what cannot work.
func TestResolve(t *testing.T) {
	o, err := parse(t, "env:1, env:2")
	if err != nil || strings.Join(o.Servers, ",") != "env:1,env:2" {
		t.Errorf("from $%s: %v, %v", EnvServers, o.Servers, err)
	}
	o, err = parse(t, "env:1", "-servers", "h:1,h:2", "-namespace", "app", "-auth", "digest:u:p", "-log-level", "warn")
	if err != nil || strings.Join(o.Servers, ",") != "h:1,h:2" || o.Namespace != "app" {
		t.Errorf("from -servers: %v, %q, %v", o.Servers, o.Namespace, err)
	}
	for _, args := range [][]string{
		{},
		{"-servers", " , "},
		{"-servers", "h:1", "-namespace", "/"},
		{"-servers", "h:1", "-namespace", "a//b"},
		{"-servers", "h:1", "-auth", "digest"},
		{"-servers", "h:1", "-auth", ":x"},
		{"-servers", "h:1", "-session-timeout", "0s"},
		{"-servers", "h:1", "-connect-timeout", "-1s"},
		{"-servers", "h:1", "-log-level", "loud"},
	} {
		if _, err := parse(t, "", args...); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: got %v, want a usage error", args, err)
		}
	}
}
