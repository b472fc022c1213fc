package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Unit tests of the ensemble tracker's pure parts: the parser of
// /zookeeper/config and the host provider whose list it replaces. No
// server needed.

func TestEnsembleConfigParse(t *testing.T) {
	data := "server.3=10.0.0.3:2888:3888:observer;10.0.0.3:2181\n" +
		"server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181\n" +
		"server.2=zk2.example:2888:3888;2182\n" +
		"server.4=[fe80::4]:2888:3888:participant;[fe80::4]:2181\n" +
		"server.5=[::1]:2888:3888;[::]:2185\n" +
		"server.6=10.0.0.6:2888:3888:participant\n" +
		"server.7=10.0.0.7:2888:3888|10.1.0.7:2888:3888;2187\n" +
		"# a comment\n\ngroup.1=1:2\nversion=10000000a\n"
	cfg, err := parseEnsembleConfig([]byte(data))
	require.NoError(t, err)
	assert.Equal(t, "10000000a", cfg.Version)
	want := []ensembleMember{
		{ID: 1, Client: "10.0.0.1:2181"},                 // a wildcard client host: the quorum host
		{ID: 2, Client: "zk2.example:2182"},              // no client host: the quorum host; participant by default
		{ID: 3, Client: "10.0.0.3:2181", Observer: true}, // observers are members a client may use
		{ID: 4, Client: "[fe80::4]:2181"},
		{ID: 5, Client: "[::1]:2185"},
		{ID: 6}, // no client part: no client address
		{ID: 7, Client: "10.0.0.7:2187"},
	}
	assert.Equal(t, want, cfg.Members)
	assert.Equal(t, []string{"10.0.0.1:2181", "10.0.0.3:2181", "10.0.0.7:2187", "[::1]:2185", "[fe80::4]:2181", "zk2.example:2182"}, cfg.Clients(false))
	assert.False(t, cfg.dynamic(false), "server.6 has no client address")
	assert.Empty(t, cfg.Clients(true), "no TLS client addresses before 3.10")
}

// ZooKeeper 3.10 (ZOOKEEPER-4276) adds the TLS client address as a
// third part; a TLS Client follows those.
func TestEnsembleConfigParseSecure(t *testing.T) {
	data := "server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181;10.0.0.1:2281\n" +
		"server.2=10.0.0.2:2888:3888;;2282\n" +
		"server.3=[fe80::3]:2888:3888:observer;2181;[::]:2283\n"
	cfg, err := parseEnsembleConfig([]byte(data))
	require.NoError(t, err)
	assert.Equal(t, []ensembleMember{
		{ID: 1, Client: "10.0.0.1:2181", SecureClient: "10.0.0.1:2281"},
		{ID: 2, SecureClient: "10.0.0.2:2282"},
		{ID: 3, Client: "[fe80::3]:2181", SecureClient: "[fe80::3]:2283", Observer: true},
	}, cfg.Members)
	assert.True(t, cfg.dynamic(true))
	assert.False(t, cfg.dynamic(false), "server.2 is TLS only")
	assert.Equal(t, []string{"10.0.0.1:2281", "10.0.0.2:2282", "[fe80::3]:2283"}, cfg.Clients(true))
}

func TestEnsembleConfigParseEmpty(t *testing.T) {
	static := "server.1=127.0.0.1:46177:34575:participant\nserver.2=127.0.0.1:44397:46731:participant\nversion=0" // a static 3.9 ensemble's, as read
	for _, data := range []string{"", "\n", "version=0\n", "clientPort=2181\n", static} {
		cfg, err := parseEnsembleConfig([]byte(data))
		require.NoError(t, err, "%q", data)
		assert.Empty(t, cfg.Clients(false), "%q", data)
		assert.False(t, cfg.dynamic(false), "%q", data)
	}
}

func TestEnsembleConfigParseBad(t *testing.T) {
	for _, line := range []string{
		"server.x=10.0.0.1:2888:3888;2181",
		"server.1=10.0.0.1:2888;2181",
		"server.1=10.0.0.1:2888:3888:leader;2181",
		"server.1=10.0.0.1:2888:3888;host:port",
		"server.1=[fe80::1:2888:3888;2181",
		"server.1=:2888:3888;2181",
		"server.1=10.0.0.1:0:3888;2181",
		"server.1=10.0.0.1:2888:3888;2181;x",
	} {
		_, err := parseEnsembleConfig([]byte(line + "\nversion=1\n"))
		assert.Error(t, err, line)
	}
}

// testHosts is an ensembleHosts whose names resolve to themselves, and
// "bad" to nothing.
func testHosts(t *testing.T, servers ...string) *ensembleHosts {
	h := newEnsembleHosts()
	h.lookup = func(_ context.Context, host string) ([]string, error) {
		if host == "bad" {
			return nil, errors.New("no such host")
		}
		return []string{host}, nil
	}
	require.NoError(t, h.Init(servers))
	return h
}

func TestEnsembleHostsRotate(t *testing.T) {
	h := testHosts(t, "a:1", "b:1", "a:1")
	assert.Equal(t, 2, h.Len(), "duplicates removed")
	s1, retry := h.Next()
	assert.False(t, retry)
	s2, retry := h.Next()
	assert.False(t, retry)
	assert.ElementsMatch(t, []string{"a:1", "b:1"}, []string{s1, s2})
	_, retry = h.Next()
	assert.True(t, retry, "every server tried since the last connection")
	h.Connected()
	_, retry = h.Next()
	assert.False(t, retry)

	assert.Error(t, h.Init([]string{"a:1", "bad:1"}), "the addresses the user gave must resolve")
}

func TestEnsembleHostsReplaceKeepsCurrent(t *testing.T) {
	h := testHosts(t, "a:1", "b:1")
	cur, _ := h.Next()
	h.Connected()
	assert.Empty(t, h.replace([]string{"c:1", cur, "d:1"}), "the server in use is still a member")
	assert.Equal(t, []string{"c:1", cur, "d:1"}, h.servers)
	next, retry := h.Next()
	assert.NotEqual(t, cur, next, "a reconnection goes to the next member")
	assert.False(t, retry)
}

func TestEnsembleHostsReplaceDropsCurrent(t *testing.T) {
	h := testHosts(t, "a:1")
	cur, _ := h.Next()
	h.Connected()
	assert.Equal(t, "a:1", h.replace([]string{"b:1", "c:1"}), "the server in use was removed")
	var got []string
	for range 2 {
		s, retry := h.Next()
		assert.False(t, retry)
		got = append(got, s)
	}
	assert.ElementsMatch(t, []string{"b:1", "c:1"}, got)
	assert.NotContains(t, got, cur)
}

func TestEnsembleTrackerSeen(t *testing.T) {
	c := newClient(DefaultConfig())
	cfgOf := func(clients ...string) ensembleConfig {
		var cfg ensembleConfig
		for i, cl := range clients {
			cfg.Members = append(cfg.Members, ensembleMember{ID: int64(i + 1), Client: cl})
		}
		return cfg
	}

	// Seeds that are members: the client learns the others at once.
	h := testHosts(t, "a:1")
	tr := &ensembleTracker{c: c, hosts: h}
	tr.seen(cfgOf("a:1", "b:1"))
	assert.Equal(t, []string{"a:1", "b:1"}, h.list())

	// Seeds that are not (a proxy): kept until the membership changes.
	h = testHosts(t, "proxy:1")
	tr = &ensembleTracker{c: c, hosts: h}
	tr.seen(cfgOf("a:1", "b:1"))
	assert.Equal(t, []string{"proxy:1"}, h.list())
	tr.seen(cfgOf("b:1", "a:1"))
	assert.Equal(t, []string{"proxy:1"}, h.list(), "the same members")
	tr.seen(cfgOf("a:1", "b:1", "c:1"))
	assert.Equal(t, []string{"a:1", "b:1", "c:1"}, h.list(), "a member added")
	tr.seen(cfgOf("c:1"))
	assert.Equal(t, []string{"c:1"}, h.list(), "members removed")
	tr.seen(cfgOf("bad:1"))
	assert.Equal(t, []string{"c:1"}, h.list(), "no new member resolves: kept")
	tr.seen(ensembleConfig{Members: []ensembleMember{{ID: 1, Client: "a:1"}, {ID: 2}}})
	assert.Equal(t, []string{"c:1"}, h.list(), "a server without a client address: a static configuration, ignored")
	tr.seen(ensembleConfig{})
	assert.True(t, slices.Equal([]string{"c:1"}, h.list()), "no members: kept")

	// A TLS client follows the TLS addresses, and only those.
	h = testHosts(t, "a:2")
	tr = &ensembleTracker{c: c, hosts: h, secure: true}
	tr.seen(cfgOf("a:1", "b:1"))
	assert.Equal(t, []string{"a:2"}, h.list(), "no TLS addresses: nothing to follow")
	tr.seen(ensembleConfig{Members: []ensembleMember{{ID: 1, Client: "a:1", SecureClient: "a:2"}, {ID: 2, Client: "b:1", SecureClient: "b:2"}}})
	assert.Equal(t, []string{"a:2", "b:2"}, h.list())
}
