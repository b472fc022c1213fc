package zktest

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// fourLetter sends a four-letter-word command to addr and returns the whole
// reply (the server closes the connection after answering).
func fourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", fmt.Errorf("zktest: %s to %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", fmt.Errorf("zktest: %s to %s: %w", cmd, addr, err)
	}
	if ct := tlsOf(addr); ct != nil { // a TLS server answers them over TLS
		cfg := ct.client.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
		conn = tls.Client(conn, cfg)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("zktest: %s to %s: %w", cmd, addr, err)
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return string(out), fmt.Errorf("zktest: %s to %s: %w", cmd, addr, err)
	}
	return string(out), nil
}

// mode4 returns member i's "Mode:" from "srvr", or "" when it does not
// answer or does not serve.
func (c *Cluster) mode4(i int, timeout time.Duration) string {
	out, err := fourLetter(c.servers[i], "srvr", timeout)
	if err != nil {
		return ""
	}
	v, _ := parseKV(out, "Mode", ':')
	return v
}

// FourLetter sends the four-letter-word command cmd ("ruok", "srvr", "mntr",
// "wchs", "cons", "conf", ...) to member i and returns the raw reply. It
// gives up after 5 seconds. Servers this package starts accept every
// command.
func (c *Cluster) FourLetter(i int, cmd string) (string, error) {
	if err := c.checkIndex(i); err != nil {
		return "", err
	}
	return fourLetter(c.servers[i], cmd, 5*time.Second)
}

// ZnodeCount returns the number of znodes in member i's tree
// (zk_znode_count in "mntr"). The count includes ZooKeeper's own nodes: a
// fresh 3.8 server reports 5, so compare counts rather than absolute values.
func (c *Cluster) ZnodeCount(i int) (int, error) {
	out, err := c.FourLetter(i, "mntr")
	if err != nil {
		return 0, err
	}
	return intField(out, "zk_znode_count", '\t')
}

// WatchCount returns the number of watches set on member i ("Total
// watches:N" in "wchs"). Watches are per server: a client's watches are
// counted by the member it is connected to.
func (c *Cluster) WatchCount(i int) (int, error) {
	out, err := c.FourLetter(i, "wchs")
	if err != nil {
		return 0, err
	}
	return intField(out, "Total watches", ':')
}

// LogContains reports whether member i's log so far contains substr. The
// servers this package starts log at INFO, for example "Using
// checkIntervalMs=1000" from the container manager. Lines appear as the
// server writes them, some only after it starts serving (the container
// manager's among them, and in an ensemble only on the leader), so poll
// rather than check once. It is always false for a cluster named by
// ZK_TEST_SERVERS, and for a local installation without slf4j-simple
// (Debian's libslf4j-java provides it).
func (c *Cluster) LogContains(i int, substr string) bool {
	if c.checkIndex(i) != nil {
		return false
	}
	var data []byte
	switch c.mode {
	case modeLocal:
		data = c.local.readLog(i)
	case modeContainer:
		data = c.ctr.Log()
	default:
		return false
	}
	return bytes.Contains(data, []byte(substr))
}

// logTails reports the last lines of every member's log through t.Log.
func (c *Cluster) logTails(t testing.TB) {
	t.Helper()
	for i := range c.servers {
		var data []byte
		switch c.mode {
		case modeLocal:
			data = c.local.readLog(i)
		case modeContainer:
			data = c.ctr.Log()
		default:
			return
		}
		t.Logf("zktest: last %d lines of the log of member %d (%s):\n%s",
			logTailLines, i, c.servers[i], tail(data, logTailLines))
	}
}

// tail returns the last n lines of data.
func tail(data []byte, n int) string {
	data = bytes.TrimRight(data, "\n")
	idx := len(data)
	for k := 0; k < n && idx > 0; k++ {
		j := bytes.LastIndexByte(data[:idx], '\n')
		if j < 0 {
			idx = 0
			break
		}
		idx = j
	}
	if idx > 0 {
		idx++ // skip the newline itself
	}
	return string(data[idx:])
}

// parseKV finds the first line "key<sep>value" in out and returns value,
// trimmed.
func parseKV(out, key string, sep byte) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		k, v, ok := strings.Cut(line, string(sep))
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

func intField(out, key string, sep byte) (int, error) {
	v, ok := parseKV(out, key, sep)
	if !ok {
		return 0, fmt.Errorf("zktest: no %q in server reply %q", key, out)
	}
	n, ok := atoi(v)
	if !ok {
		return 0, fmt.Errorf("zktest: %q is %q, not a number", key, v)
	}
	return n, nil
}

func atoi(s string) (int, bool) {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		return 0, false
	}
	return n, true
}
