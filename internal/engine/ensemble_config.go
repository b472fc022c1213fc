package engine

// The ensemble's configuration as ZooKeeper 3.5+ publishes it in
// /zookeeper/config, read by the ensemble tracker (ensemble.go).

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// ensembleConfigPath is the node where a ZooKeeper 3.5+ ensemble
// publishes its dynamic configuration (ZooDefs.CONFIG_NODE).
const ensembleConfigPath = "/zookeeper/config"

// ensembleMember is one server of the ensemble's configuration.
type ensembleMember struct {
	ID     int64
	Client string // "host:port" a client connects to; "" when the server has no client address
	// SecureClient is the TLS client address (ZooKeeper 3.10+, the
	// third part of the line); "" when the server publishes none.
	SecureClient string
	Observer     bool // role observer (a client may connect to it too); participant otherwise
}

// ensembleConfig is the parsed content of /zookeeper/config.
type ensembleConfig struct {
	Members []ensembleMember // by id
	Version string           // the "version" line, hexadecimal; "" when absent
}

// Clients returns the client addresses of the members that have one
// (their TLS ones with secure), sorted: the addresses a client may
// connect to.
func (cfg ensembleConfig) Clients(secure bool) []string {
	var out []string
	for _, m := range cfg.Members {
		if a := m.address(secure); a != "" {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

func (m ensembleMember) address(secure bool) string {
	if secure {
		return m.SecureClient
	}
	return m.Client
}

// parseEnsembleConfig parses /zookeeper/config's data: lines
//
//	server.N=host:quorumPort:electionPort[:role][|host:q:e...];[[clientHost:]clientPort][;[secureHost:]securePort]
//	version=HEX
//
// (a host may be an IPv6 address in brackets). A server with no client
// part has no client address (a client cannot reach it); one whose client
// host is missing or a wildcard (0.0.0.0, ::) is reached at its quorum
// host, as Curator's EnsembleTracker does. Other keys (group, weight,
// comments, blank lines) are ignored; a malformed server line is an error.
func parseEnsembleConfig(data []byte) (ensembleConfig, error) {
	var cfg ensembleConfig
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case key == "version":
			cfg.Version = value
		case strings.HasPrefix(key, "server."):
			id, err := strconv.ParseInt(strings.TrimPrefix(key, "server."), 10, 64)
			if err != nil {
				return ensembleConfig{}, fmt.Errorf("ensemble config: %q: bad server id", line)
			}
			m, err := parseServerLine(value)
			if err != nil {
				return ensembleConfig{}, fmt.Errorf("ensemble config: %q: %w", line, err)
			}
			m.ID = id
			cfg.Members = append(cfg.Members, m)
		}
	}
	sort.Slice(cfg.Members, func(i, j int) bool { return cfg.Members[i].ID < cfg.Members[j].ID })
	return cfg, nil
}

// parseServerLine parses the value of one server.N line.
func parseServerLine(value string) (ensembleMember, error) {
	var m ensembleMember
	quorum, client, hasClient := strings.Cut(value, ";")
	first, _, _ := strings.Cut(quorum, "|") // 3.6+: several quorum addresses; the first names the host
	host, rest, err := splitHost(strings.TrimSpace(first))
	if err != nil {
		return m, err
	}
	parts := strings.Split(rest, ":") // quorumPort:electionPort[:role]
	if len(parts) < 2 || len(parts) > 3 || !isPort(parts[0]) || !isPort(parts[1]) {
		return m, fmt.Errorf("want host:quorumPort:electionPort[:role], got %q", first)
	}
	if len(parts) == 3 {
		switch strings.ToLower(parts[2]) {
		case "participant":
		case "observer":
			m.Observer = true
		default:
			return m, fmt.Errorf("unknown role %q", parts[2])
		}
	}
	if !hasClient {
		return m, nil
	}
	plain, secure, _ := strings.Cut(client, ";") // 3.10+: [clientAddress];secureClientAddress
	if m.Client, err = clientAddress(plain, host); err != nil {
		return m, err
	}
	if m.SecureClient, err = clientAddress(secure, host); err != nil {
		return m, err
	}
	return m, nil
}

// clientAddress parses a client address, "[host:]port" ("" for none);
// a missing or wildcard host is the server's quorum host.
func clientAddress(s, quorumHost string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	host, port := "", s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i+1:]
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if !isPort(port) {
		return "", fmt.Errorf("bad client port in %q", s)
	}
	if host == "" || isWildcard(host) {
		host = quorumHost
	}
	return net.JoinHostPort(host, port), nil
}

// splitHost splits "host:rest" or "[v6]:rest" into the host (without
// brackets) and what follows its colon.
func splitHost(s string) (host, rest string, _ error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 || end+1 >= len(s) || s[end+1] != ':' {
			return "", "", fmt.Errorf("bad bracketed host in %q", s)
		}
		return s[1:end], s[end+2:], nil
	}
	host, rest, ok := strings.Cut(s, ":")
	if !ok || host == "" {
		return "", "", fmt.Errorf("want host:quorumPort:electionPort, got %q", s)
	}
	return host, rest, nil
}

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 1<<16
}

// isWildcard reports whether host is the any-local address a server
// binds to (not one a client can dial elsewhere).
func isWildcard(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// dynamic reports whether the configuration names members a client can
// follow: some, each with a client address (a TLS one, with secure). A
// standalone server's is empty; in a static ensemble's (no
// reconfigEnabled, client ports outside the server lines) each server
// names its own client address only, and its view is no list of members.
// Before ZooKeeper 3.10 no server names a TLS client address.
func (cfg ensembleConfig) dynamic(secure bool) bool {
	if len(cfg.Members) == 0 {
		return false
	}
	for _, m := range cfg.Members {
		if m.address(secure) == "" {
			return false
		}
	}
	return true
}
