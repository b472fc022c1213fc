package nodes_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// TestMisuse calls every method of every type of package nodes on a nil
// pointer, a zero value, before Start, after Close and twice, and checks
// that each returns an error matching the right sentinel (the same
// "not made" error from every method of a nil or zero recipe), never
// panics and never hangs.
func TestMisuse(t *testing.T) {
	zkc := testutil.SharedServer(t)
	c := connect(t, zkc.Servers(), recipes.WithNamespace(testutil.Namespace(t)))
	ctx := context.Background()
	var nilCtx context.Context
	invalidArg := []error{recipes.ErrInvalidArgument}
	var cases testutil.MisuseTable
	add := cases.Add

	for name, n := range map[string]*nodes.PersistentNode{"nil": nil, "zero": {}} {
		add(name+" PersistentNode.Start", invalidArg, func() error { return n.Start(ctx) })
		add(name+" PersistentNode.WaitReady", invalidArg, func() error { return n.WaitReady(ctx) })
		add(name+" PersistentNode.SetData", invalidArg, func() error { return n.SetData(ctx, nil) })
		add(name+" PersistentNode.Close", invalidArg, func() error { return n.Close(ctx) })
		add(name+" PersistentNode reads", nil, func() error {
			_, _, _, _ = n.Path(), n.Mode(), n.ActualPath(), n.Data()
			n.Listen(func(nodes.Event) {})()
			return nil
		})
	}
	for name, n := range map[string]*nodes.PersistentTTLNode{"nil": nil, "zero": {}} {
		add(name+" PersistentTTLNode.Start", invalidArg, func() error { return n.Start(ctx) })
		add(name+" PersistentTTLNode.WaitReady", invalidArg, func() error { return n.WaitReady(ctx) })
		add(name+" PersistentTTLNode.SetData", invalidArg, func() error { return n.SetData(ctx, nil) })
		add(name+" PersistentTTLNode.Close", invalidArg, func() error { return n.Close(ctx) })
		add(name+" PersistentTTLNode reads", nil, func() error {
			_, _, _, _, _ = n.Path(), n.TTL(), n.TouchPath(), n.LastTouch(), n.Data()
			return nil
		})
	}
	for name, g := range map[string]*nodes.GroupMember{"nil": nil, "zero": {}} {
		add(name+" GroupMember.Start", invalidArg, func() error { return g.Start(ctx) })
		add(name+" GroupMember.WaitReady", invalidArg, func() error { return g.WaitReady(ctx) })
		add(name+" GroupMember.SetData", invalidArg, func() error { return g.SetData(ctx, nil) })
		add(name+" GroupMember.Err", invalidArg, func() error { return g.Err() })
		add(name+" GroupMember.Close", invalidArg, func() error { return g.Close(ctx) })
		add(name+" GroupMember reads", nil, func() error {
			_, _, _ = g.ID(), g.Path(), g.CurrentMembers()
			g.Listen(func(nodes.GroupState) {})()
			return nil
		})
	}

	add("NewPersistentNode(nil client)", []error{recipes.ErrNilClient}, func() error {
		_, err := nodes.NewPersistentNode(nil, "/n", nodes.Persistent, nil)
		return err
	})
	add("NewPersistentNode(TTL mode without WithTTL)", invalidArg, func() error {
		_, err := nodes.NewPersistentNode(c, "/n", nodes.PersistentWithTTL, nil)
		return err
	})
	add("NewPersistentTTLNode(0 TTL)", invalidArg, func() error { _, err := nodes.NewPersistentTTLNode(c, "/t", 0, nil); return err })
	add("NewGroupMember(bad id)", invalidArg, func() error { _, err := nodes.NewGroupMember(c, "/g", "a/b", nil); return err })

	n, err := nodes.NewPersistentNode(c, "/n", nodes.Ephemeral, nil)
	if err != nil {
		t.Fatal(err)
	}
	add("PersistentNode.WaitReady before Start", []error{recipes.ErrNotStarted}, func() error { return n.WaitReady(ctx) })
	add("PersistentNode.Start(nil ctx)", invalidArg, func() error { return n.Start(nilCtx) })
	ttl, err := nodes.NewPersistentTTLNode(c, "/t", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := nodes.NewGroupMember(c, "/g", "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	add("GroupMember.WaitReady before Start", []error{recipes.ErrNotStarted}, func() error { return g.WaitReady(ctx) })
	add("GroupMember.Start(nil ctx)", invalidArg, func() error { return g.Start(nilCtx) })

	type life interface {
		Start(context.Context) error
		Close(context.Context) error
	}
	for name, r := range map[string]life{"PersistentNode": n, "PersistentTTLNode": ttl, "GroupMember": g} {
		add(name+": Start twice", []error{recipes.ErrAlreadyStarted}, func() error {
			if err := r.Start(ctx); err != nil {
				return err
			}
			return r.Start(ctx)
		})
		add(name+": Close twice", nil, func() error {
			if err := r.Close(ctx); err != nil {
				return err
			}
			return r.Close(ctx)
		})
		add(name+": Start after Close", []error{recipes.ErrClosed}, func() error { return r.Start(ctx) })
	}
	add("PersistentNode.SetData after Close", []error{recipes.ErrClosed}, func() error { return n.SetData(ctx, nil) })
	add("PersistentNode.WaitReady after Close", []error{recipes.ErrClosed}, func() error { return n.WaitReady(ctx) })
	testutil.RunMisuse(t, cases)
}
