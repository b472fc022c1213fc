package zktest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseServerVersion(t *testing.T) {
	for in, want := range map[string]string{
		"Zookeeper version: 3.9.6-2, built on 2025-10-16 15:56 UTC\nLatency min/avg/max: 0/0.0/0\n": "3.9.6",
		"Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2023-01-01\n":                       "3.8.0",
		"Zookeeper version: 3.9.4\n": "3.9.4",
	} {
		if got, ok := parseServerVersion(in); !ok || got != want {
			t.Errorf("parseServerVersion(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := parseServerVersion("Mode: standalone\n"); ok {
		t.Errorf("no version line: got %q", got)
	}
	for _, c := range []struct {
		v, want string
		ok      bool
	}{{"3.9.6", "3.9", true}, {"3.9.6", "3.9.6", true}, {"3.10.1", "3.1", false}, {"3.8.0", "3.9", false}} {
		if versionMatches(c.v, c.want) != c.ok {
			t.Errorf("versionMatches(%q, %q) != %v", c.v, c.want, c.ok)
		}
	}
}

// A glob of an unpacked release sorts zookeeper-3.9.6.jar before
// zookeeper-jute-3.9.6.jar; the class path must have jute first.
func TestHomeClasspathPutsJuteFirst(t *testing.T) {
	home := t.TempDir()
	lib := filepath.Join(home, "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"netty-common-4.1.jar", "zookeeper-3.9.6.jar", "zookeeper-jute-3.9.6.jar", "slf4j-api-1.7.jar"} {
		if err := os.WriteFile(filepath.Join(lib, j), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := homeClasspath(home)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range strings.Split(cp, string(os.PathListSeparator)) {
		names = append(names, filepath.Base(p))
	}
	want := []string{"zookeeper-jute-3.9.6.jar", "netty-common-4.1.jar", "slf4j-api-1.7.jar", "zookeeper-3.9.6.jar"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("class path %v, want %v", names, want)
	}
}

// The server a test gets reports its version, and ZK_TEST_VERSION, when
// set, is what runs.
func TestServerVersion(t *testing.T) {
	zkc := Start(t)
	v, err := zkc.ServerVersion(0)
	if err != nil {
		t.Fatal(err)
	}
	if v != zkc.Version() {
		t.Fatalf("ServerVersion %q, Version %q", v, zkc.Version())
	}
	if want := requestedVersion(); want != "" && !versionMatches(v, want) {
		t.Fatalf("%s=%s but the server runs %s", EnvVersion, want, v)
	}
	t.Logf("server runs ZooKeeper %s", v)
}
