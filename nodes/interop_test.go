package nodes_test

// Interop: real Apache Curator (Java, driven through internal/interop)
// GroupMember, PersistentNode and PersistentTTLNode on the paths ours use.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// lineWith waits for a line of p that starts with prefix and returns it.
func lineWith(t *testing.T, p *interop.Proc, prefix string) string {
	t.Helper()
	var got string
	eventually(t, 30*time.Second, "a line "+prefix, func() bool {
		for _, l := range p.Lines() {
			if strings.HasPrefix(l, prefix) {
				got = l
				return true
			}
		}
		return false
	})
	return got
}

// curatorMembers asks a Curator group member for its current members.
func curatorMembers(t *testing.T, p *interop.Proc, n int) string {
	t.Helper()
	require.NoError(t, p.Send(fmt.Sprintf("MEMBERS? %d", n)))
	l := lineWith(t, p, fmt.Sprintf("MEMBERS %d ", n))
	return strings.TrimPrefix(l, fmt.Sprintf("MEMBERS %d ", n))
}

// A Curator GroupMember and ours see each other's members and payloads; a
// Curator member that takes our id writes its payload over ours (what
// Curator does), which ours reports as a duplicate.
func TestCuratorInteropGroupMember(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const path = "/interop/group"
	dir := t.TempDir()
	java := testutil.Curator(t, ctx, dir, "groupmember", zkc.ConnectString(), path, "java", "pj")
	require.NoError(t, java.WaitLine(ctx, "STARTED"))
	g := member(t, connect(t, zkc.Servers()), path, "go", []byte("pg"))
	require.NoError(t, g.WaitReady(ctx))
	eventually(t, 30*time.Second, "ours sees Curator's member", func() bool {
		ms := g.CurrentMembers()
		return len(ms) == 2 && ms[1].ID == "java" && string(ms[1].Payload) == "pj"
	})
	n := 0
	eventually(t, 30*time.Second, "Curator sees ours", func() bool {
		n++
		return curatorMembers(t, java, n) == "go=pg,java=pj"
	})

	// A Curator PersistentNode (ephemeral) in the group is a member too.
	pn := testutil.Curator(t, ctx, dir, "persistentnode", zkc.ConnectString(), path+"/pnode", "EPHEMERAL", "pn")
	assert.Equal(t, "NODE "+path+"/pnode", lineWith(t, pn, "NODE "))
	eventually(t, 30*time.Second, "three members", func() bool { return len(g.CurrentMembers()) == 3 })
	require.NoError(t, pn.Send("close"))
	require.NoError(t, pn.WaitLine(ctx, "CLOSED"))
	eventually(t, 30*time.Second, "Curator's PersistentNode deleted on close", func() bool { return len(g.CurrentMembers()) == 2 })

	// A duplicate id on the Curator side: it overwrites our payload.
	dup := testutil.Curator(t, ctx, dir, "groupmember", zkc.ConnectString(), path, "go", "curator-dup")
	require.NoError(t, dup.WaitLine(ctx, "STARTED"))
	eventually(t, 30*time.Second, "ours reports the duplicate", func() bool { return g.Err() != nil })
	assert.ErrorIs(t, g.Err(), recipes.ErrDuplicateMember)
	t.Log(g.Err())
	require.NoError(t, dup.Send("close"))
	require.NoError(t, dup.WaitLine(ctx, "CLOSED"))

	require.NoError(t, g.Close(ctx))
	n++
	eventually(t, 30*time.Second, "Curator sees ours gone", func() bool {
		n++
		return curatorMembers(t, java, n) == "java=pj"
	})
	require.NoError(t, java.Send("close"))
	require.NoError(t, java.WaitLine(ctx, "CLOSED"))
}

// A Curator PersistentTtlNode (Curator 5.4 to 5.8: a CONTAINER parent) is
// read by ReadTTLNode, adopted by ours after Curator closes, and reaped by
// the server after our Close.
func TestCuratorInteropTtlNode(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const path = "/interop/ttl"
	a := connect(t, zkc.Servers())
	java := testutil.Curator(t, ctx, t.TempDir(), "ttlnode", zkc.ConnectString(), path, "1000", "from-java")
	require.NoError(t, java.WaitLine(ctx, "STARTED"))
	eventually(t, 30*time.Second, "Curator's node read, touched", func() bool {
		s, err := nodes.ReadTTLNode(ctx, a, path)
		return err == nil && s.Exists && s.Touched && string(s.Data) == "from-java"
	})
	s, err := nodes.ReadTTLNode(ctx, a, path)
	require.NoError(t, err)
	t.Logf("Curator's TTL node: data %q, touch data %q, last touch %v ago", s.Data, s.TouchData, time.Since(s.LastTouch).Round(time.Millisecond))

	// Ours on the same path while Curator's runs: the parent is adopted.
	n, err := nodes.NewPersistentTTLNode(a, path, time.Second, []byte("from-go"))
	require.NoError(t, err)
	require.NoError(t, n.Start(ctx))
	defer n.Close(ctx)
	require.NoError(t, n.WaitReady(ctx))
	require.NoError(t, java.Send("close"))
	require.NoError(t, java.WaitLine(ctx, "CLOSED"))
	eventually(t, 10*time.Second, "ours holds the parent", func() bool {
		s, err := nodes.ReadTTLNode(ctx, a, path)
		return err == nil && string(s.Data) == "from-go" && s.Touched
	})
	require.NoError(t, n.Close(ctx))
	eventually(t, 20*time.Second, "reaped after both closed", func() bool {
		s, err := nodes.ReadTTLNode(ctx, a, path)
		return err == nil && !s.Exists
	})
}
