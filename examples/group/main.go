// Command group demonstrates package nodes: service processes, each with a
// ZooKeeper session of its own, join a group (GroupMember, Curator's
// layout) with their address as payload, and see each other. One member's
// node is deleted by an operator and comes back with its latest payload; a
// process that starts with an id already in use is reported as a
// duplicate instead of overwriting the member (Curator overwrites); a
// member whose process goes away (its client closed, its session with it)
// leaves every member's view. A heartbeat TTL node (PersistentTtlNode) is
// touched while the group runs and reaped by the server after it stops.
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper,
// and ends with a verdict line. Run it with "go run ./examples/group".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	base      = "/zkrecipes-examples/group"
	groupPath = base + "/members"
	beatPath  = base + "/heartbeat"
)

var size = flag.Int("members", 4, "members (each with its own session)")

func main() {
	flag.Parse()
	demo.Main(2*time.Minute, run)
}

func ids(ms []nodes.Member) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID + "=" + string(m.Payload)
	}
	return strings.Join(out, " ")
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		if err := demo.Pause(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
	}
	return nil
}

func run(ctx context.Context, servers []string) error {
	if *size < 2 {
		return errors.New("-members must be at least 2")
	}
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	defer demo.DeleteTree(admin, base)

	var (
		clients []*recipes.Client
		members []*nodes.GroupMember
	)
	defer func() {
		for i, m := range members {
			m.Close(context.Background())
			clients[i].Close(context.Background())
		}
	}()
	for i := 1; i <= *size; i++ {
		c, err := demo.Connect(servers, 4*time.Second)
		if err != nil {
			return err
		}
		m, err := nodes.NewGroupMember(c, groupPath, fmt.Sprintf("svc-%d", i), []byte(fmt.Sprintf("10.0.0.%d:8080", i)))
		if err != nil {
			c.Close(ctx)
			return err
		}
		clients, members = append(clients, c), append(members, m)
		if err := m.Start(ctx); err != nil {
			return err
		}
	}
	for _, m := range members {
		if err := m.WaitReady(ctx); err != nil {
			return err
		}
	}
	all := func(n int) func() bool {
		return func() bool {
			for _, m := range members[:n] {
				if len(m.CurrentMembers()) != n {
					return false
				}
			}
			return true
		}
	}
	if err := waitFor(ctx, "every member to see every member", all(*size)); err != nil {
		return err
	}
	demo.Say("svc-1 sees: %s", ids(members[0].CurrentMembers()))

	beat, err := nodes.NewPersistentTTLNode(admin, beatPath, time.Second, []byte("group alive"))
	if err != nil {
		return err
	}
	if err := beat.Start(ctx); err != nil {
		return err
	}
	if err := beat.WaitReady(ctx); err != nil {
		return err
	}

	// An operator deletes svc-2's node after it moved to a new address.
	if err := members[1].SetData(ctx, []byte("10.0.0.2:9090")); err != nil {
		return err
	}
	if err := admin.Delete(ctx, groupPath+"/svc-2", -1); err != nil {
		return err
	}
	back := waitFor(ctx, "svc-2 back with its latest payload", func() bool {
		d, _, err := admin.Get(ctx, groupPath+"/svc-2")
		return err == nil && string(d) == "10.0.0.2:9090"
	}) == nil
	demo.Say("svc-2's node deleted by an operator: back with its latest payload: %v", back)

	// A second process starts with svc-1's id.
	dc, err := demo.Connect(servers, 4*time.Second)
	if err != nil {
		return err
	}
	defer dc.Close(context.Background())
	dup, err := nodes.NewGroupMember(dc, groupPath, "svc-1", []byte("10.0.0.99:8080"))
	if err != nil {
		return err
	}
	if err := dup.Start(ctx); err != nil {
		return err
	}
	_ = waitFor(ctx, "the duplicate reported", func() bool { return dup.Err() != nil })
	dupErr := dup.Err()
	d, _, _ := admin.Get(ctx, groupPath+"/svc-1")
	kept := string(d) == "10.0.0.1:8080"
	demo.Say("a second svc-1: %v; svc-1's payload kept: %v", dupErr, kept)
	dup.Close(ctx)

	// The last member's process goes away (its session with it).
	last := len(members) - 1
	members[last].Close(ctx)
	clients[last].Close(ctx)
	members, clients = members[:last], clients[:last]
	if err := waitFor(ctx, "the others to see the member leave", all(last)); err != nil {
		return err
	}
	demo.Say("svc-%d left: svc-1 sees %s", last+1, ids(members[0].CurrentMembers()))

	s, err := nodes.ReadTTLNode(ctx, admin, beatPath)
	if err != nil {
		return err
	}
	touched := s.Touched
	demo.Say("heartbeat %s: touched %v, last touch %v ago", beatPath, s.Touched, time.Since(s.LastTouch).Round(time.Millisecond))
	began := time.Now()
	if err := beat.Close(ctx); err != nil {
		return err
	}
	reaped := waitFor(ctx, "the heartbeat reaped", func() bool {
		s, err := nodes.ReadTTLNode(ctx, admin, beatPath)
		return err == nil && !s.Exists
	}) == nil
	demo.Say("heartbeat closed: reaped by the server after %v", time.Since(began).Round(100*time.Millisecond))

	ok := back && errors.Is(dupErr, recipes.ErrDuplicateMember) && kept && touched && reaped
	return demo.Verdict(ok, "%d members saw each other; a deleted member came back with its latest payload (%v); a duplicate id was reported, not overwritten (%v); a departed member left every view; the heartbeat was touched (%v) and reaped after Close (%v)",
		*size, back, kept, touched, reaped)
}
