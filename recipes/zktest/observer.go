package zktest

// Observers: members that follow the leader and serve clients but do not
// vote (peerType=observer), as production ensembles add them to carry
// read load.

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// WithObservers adds n observers to the ensemble StartEnsemble or Launch
// starts: StartEnsemble(t, 3, WithObservers(1)) starts 3 voting members
// (indexes 0 to 2, myid 1 to 3) and 1 observer (index 3, myid 4). Every
// member's configuration lists the observers' server lines with the
// observer role (":observer"), and an observer's configuration says
// peerType=observer. Servers and ConnectString include the observers;
// Voters, Observers and IsObserver tell them apart. Kill, Stop, Restart,
// Pause and Resume work on an observer as on a voter; Restart of an
// observer waits until it has synced with the leader (Mode: observer).
// It needs a local installation (an ensemble). With WithReconfig the
// observers are in the dynamic configuration, in the reconfig form of
// the server line.
func WithObservers(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("zktest: %d observers: must not be negative", n)
		}
		c.observers = n
		return nil
	}
}

// WithObserverLinks lets a test put something (a Proxy, for latency or a
// black-hole) on the links from the observers to the voting members, the
// leader's included, over which an observer learns every commit: link is
// called once for each observer and each voter, by member index, with the
// voter's quorum address ("127.0.0.1:port"), before the servers start,
// and returns the address that observer's configuration gives for that
// voter's quorum port instead. So a test can make an observer lag behind
// the ensemble by exactly the latency it sets (Proxy.SetLatency) while it
// keeps serving its clients. The election ports are not redirected. It
// cannot be used with WithReconfig.
func WithObserverLinks(link func(observer, voter int, quorumAddr string) (string, error)) Option {
	return func(c *config) error {
		if link == nil {
			return errors.New("zktest: nil observer link")
		}
		c.link = link
		return nil
	}
}

// checkObservers refuses observers where this package does not start the
// ensemble itself.
func (c *config) checkObservers(m mode) error {
	if c.observers > 0 && m != modeLocal {
		return fmt.Errorf("zktest: WithObservers needs a local ZooKeeper installation (not %s): %w", m, ErrUnavailable)
	}
	if c.link != nil && c.reconfig {
		return errors.New("zktest: WithObserverLinks with WithReconfig")
	}
	return nil
}

// quorumAddr returns the quorum address ("host:port") of member o as
// member m's configuration gives it: the one WithObserverLinks' function
// returns when m observes and o votes.
func (lc *localCluster) quorumAddr(m, o *member) (string, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(o.quorumPort))
	if lc.cfg.link == nil || !m.observer || o.observer {
		return addr, nil
	}
	link, err := lc.cfg.link(m.id-1, o.id-1, addr)
	if err != nil {
		return "", fmt.Errorf("observer link from member %d to member %d: %w", m.id-1, o.id-1, err)
	}
	return link, nil
}

// observerLine returns the role suffix of member m's server line in the
// static form (server.N=host:quorumPort:electionPort[:observer]).
func (m *member) observerLine() string {
	if m.observer {
		return ":observer"
	}
	return ""
}

// peerType returns the peerType line of member m's zoo.cfg.
func (m *member) peerType() string {
	if m.observer {
		return "peerType=observer\n"
	}
	return ""
}

// IsObserver reports whether member i is an observer: started by
// WithObservers or added as one by AddMember. For a cluster this package
// did not start, it asks the member ("srvr" reports Mode: observer);
// a member that does not answer is not one.
func (c *Cluster) IsObserver(i int) bool {
	if c.checkIndex(i) != nil {
		return false
	}
	if c.mode != modeLocal {
		return c.mode4(i, probeTimeout) == "observer"
	}
	c.local.mu.Lock()
	defer c.local.mu.Unlock()
	return c.local.members[i].observer
}

// Observers returns the client addresses of the observers, in member
// order. The slice is a copy.
func (c *Cluster) Observers() []string { return c.pick(true) }

// Voters returns the client addresses of the voting members (leader and
// followers), in member order. The slice is a copy.
func (c *Cluster) Voters() []string { return c.pick(false) }

func (c *Cluster) pick(observers bool) []string {
	var out []string
	for i, a := range c.Servers() {
		if c.IsObserver(i) == observers {
			out = append(out, a)
		}
	}
	return out
}
