package main

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A group of GroupMembers is shown as its members with their payloads; a
// PersistentTTLNode with its data and last touch.
func TestInspectGroupAndTtlNode(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := testCtx(t)
	c, err := testutil.Dial(ctx, zkc.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, id := range []string{"api-1", "api-2"} {
		g, err := nodes.NewGroupMember(c, "/svc/members", id, []byte(id+":8080"))
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer g.Close(context.Background())
		if err := g.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ttl, err := nodes.NewPersistentTTLNode(c, "/svc/beat", time.Minute, []byte("alive"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ttl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer ttl.Close(context.Background())
	zktest.Eventually(t, 10*time.Second, "touched", func() bool { return !ttl.LastTouch().IsZero() })

	out := inspectOut(t, zkc, "/svc/members")
	wantLines(t, "/svc/members", out, [][]string{
		{"/svc/members: group (GroupMember)"}, {"status: 2 members"},
		{"MEMBER", "api-1", `"api-1:8080"`}, {"MEMBER", "api-2", `"api-2:8080"`},
	}, "waiting")
	out = inspectOut(t, zkc, "/svc/beat")
	wantLines(t, "/svc/beat", out, [][]string{
		{"/svc/beat: TTL node (PersistentTtlNode)"}, {"status: last touch"}, {"TOUCH", "touch"},
		{"note: a TTL node (PersistentTtlNode): last touch"}, {"ZooKeeper does not report a node's TTL"},
	})
	out = inspectOut(t, zkc, "/svc")
	wantLines(t, "/svc", out, [][]string{{"/svc/members", "group", "members", "2"}, {"/svc/beat", "ttlnode", "touched"}})
	t.Log(out)
}
