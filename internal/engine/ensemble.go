package engine

// Following dynamic reconfiguration, as Curator's EnsembleTracker does:
// the Client watches /zookeeper/config and moves its connection's address
// list to the ensemble's members when they change.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// ensembleLookupTimeout bounds the DNS lookups of one address list, as
// go-zookeeper's DNSHostProvider does.
const ensembleLookupTimeout = 3 * time.Second

// ensembleHosts is the zk.HostProvider of a Client that follows the
// ensemble: go-zookeeper's DNSHostProvider (names resolved, the list
// shuffled, tried in turn) whose list the tracker can replace while the
// connection runs. A replacement keeps the server in use when it is still
// a member, so that the connection stays where it is.
type ensembleHosts struct {
	mu      sync.Mutex
	servers []string // "ip:port", shuffled
	curr    int      // the index Next returned last; -1: none yet
	last    int      // the index of the last connected server; -1: none
	lookup  func(ctx context.Context, host string) ([]string, error)
}

func newEnsembleHosts() *ensembleHosts {
	return &ensembleHosts{curr: -1, last: -1, lookup: net.DefaultResolver.LookupHost}
}

// Init takes the addresses the user gave: every name must resolve.
func (h *ensembleHosts) Init(servers []string) error {
	found, err := h.resolve(servers, true)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return fmt.Errorf("no hosts found for addresses %q", servers)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers, h.curr, h.last = found, -1, -1
	return nil
}

// resolve resolves each "host:port" to its addresses, shuffled. strict:
// a name that does not resolve is an error; otherwise it is left out.
func (h *ensembleHosts) resolve(servers []string, strict bool) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ensembleLookupTimeout)
	defer cancel()
	var found []string
	for _, srv := range servers {
		host, port, err := net.SplitHostPort(srv)
		if err == nil {
			var addrs []string
			if addrs, err = h.lookup(ctx, host); err == nil {
				for _, a := range addrs {
					found = append(found, net.JoinHostPort(a, port))
				}
				continue
			}
		}
		if strict {
			return nil, err
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	rand.Shuffle(len(found), func(i, j int) { found[i], found[j] = found[j], found[i] })
	return found, nil
}

// Len returns the number of servers.
func (h *ensembleHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the next server to connect to; retryStart is true once
// every server was tried since the last connection (go-zookeeper then
// pauses a second).
func (h *ensembleHosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart = h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

// Connected marks the server Next returned last as connected.
func (h *ensembleHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}

// list returns the servers, sorted.
func (h *ensembleHosts) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.servers)
	slices.Sort(out)
	return out
}

// replace makes servers (resolved, non-empty) the list. The server Next
// returned last keeps its place when it is one of them; otherwise the
// next connection goes to the new list's first server, and replace
// returns the server dropped (the caller cuts a connection to it).
func (h *ensembleHosts) replace(servers []string) (dropped string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := ""
	if h.curr >= 0 && h.curr < len(h.servers) {
		cur = h.servers[h.curr]
	}
	h.servers = servers
	if i := slices.Index(servers, cur); i >= 0 {
		h.curr, h.last = i, i
		return ""
	}
	h.curr, h.last = -1, -1
	return cur
}

// start follows /zookeeper/config on a Follower of its own until the
// client closes, moving the hosts' list to the ensemble's members when
// they change (see seen).
func (t *ensembleTracker) start() {
	c := t.c
	c.hosts = t.hosts
	f := c.NewFollower("ensemble", nil)
	f.Add(ensembleConfigPath, t.read)
	c.background(func() { _ = f.Run(context.Background()) }) // until Close
}

// ensembleTracker is the state of the ensemble's read, on its
// Follower's goroutine.
type ensembleTracker struct {
	c       *Client
	hosts   *ensembleHosts
	secure  bool     // WithTLS: the members' TLS client addresses are followed
	members []string // the members' client addresses read last, sorted; nil before the first read
}

// read reads /zookeeper/config, and leaves a data watch there only when
// the configuration is a dynamic one (a server that is not one leaves the
// session no watch: a standalone server, a static ensemble, a server
// before 3.5; the read runs again at the next reconnection and session).
// The requests go on the connection directly: the tracker's reads are not
// the user's, and are neither counted nor measured.
func (t *ensembleTracker) read(_ context.Context, w *Watches) error {
	c := t.c
	data, _, err := c.conn.Get(ensembleConfigPath)
	if err == nil && !w.Armed(watchData, ensembleConfigPath) {
		if cfg, perr := parseEnsembleConfig(data); perr == nil && cfg.dynamic(t.secure) {
			err = w.watch(c, watchData, ensembleConfigPath, func() (ch <-chan zk.Event, err error) {
				data, _, ch, err = c.conn.GetW(ensembleConfigPath)
				return ch, err
			})
		}
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil // a server before 3.5: no reconfiguration to follow
	case errors.Is(err, zk.ErrClosing):
		return fmt.Errorf("ensemble tracker: %w", zkerr.ErrClientClosed)
	case err != nil:
		return err
	}
	cfg, err := parseEnsembleConfig(data)
	if err != nil {
		c.log.Warn("zkrecipes: ignoring an ensemble configuration that does not parse", "err", err)
		return nil
	}
	t.seen(cfg)
	return nil
}

// seen takes a configuration read: one whose every server has a client
// address (a dynamic configuration). The first one read moves the list to
// the members only when every address in use is one of them (the user
// gave some of the members: the client learns the others); addresses
// that are not (a proxy, a load balancer) are kept until the membership
// changes. A later configuration whose members differ always moves the
// list to them.
func (t *ensembleTracker) seen(cfg ensembleConfig) {
	if !cfg.dynamic(t.secure) {
		return
	}
	members := cfg.Clients(t.secure)
	first := t.members == nil
	if !first && slices.Equal(members, t.members) {
		return
	}
	t.members = members
	resolved, _ := t.hosts.resolve(members, false)
	if len(resolved) == 0 {
		t.c.log.Warn("zkrecipes: no member of the new ensemble resolves; keeping the servers", "members", members)
		return
	}
	sorted := slices.Sorted(slices.Values(resolved))
	current := t.hosts.list()
	if first && !subset(current, sorted) || slices.Equal(current, sorted) {
		return
	}
	dropped := t.hosts.replace(resolved)
	t.c.log.Info("zkrecipes: following the ensemble's reconfiguration", "version", cfg.Version, "servers", sorted)
	if dropped != "" && t.c.wire != nil {
		// As ZooKeeper's Java client does: a server no longer a member
		// is left at once, for one that is (the session moves with the
		// connection).
		t.c.wire.cut(dropped)
	}
}

// subset reports whether every element of a is in sorted.
func subset(a, sorted []string) bool {
	for _, s := range a {
		if _, ok := slices.BinarySearch(sorted, s); !ok {
			return false
		}
	}
	return true
}

// cut closes the connection dialled last when it goes to address:
// go-zookeeper then reconnects, with the same session, to the next server
// its host provider gives.
func (w *wire) cut(address string) {
	if c := w.current.Load(); c != nil && c.addr == address {
		_ = c.Conn.Close()
	}
}

// ensembleHostsFor returns the host provider that follows the ensemble,
// or nil when cfg asks for none or gives a host provider of its own.
func ensembleHostsFor(cfg Config) *ensembleHosts {
	if cfg.NoEnsembleTracking || cfg.HostProvider != nil {
		return nil
	}
	return newEnsembleHosts()
}

// EnsembleServers returns the addresses the connection goes to, sorted,
// as the ensemble tracker keeps them; nil when the Client does not follow
// the ensemble (WithoutEnsembleTracking, a host provider of the user's,
// an adopted connection).
func (c *Client) EnsembleServers() []string {
	if c.unmade() || c.hosts == nil {
		return nil
	}
	return c.hosts.list()
}
