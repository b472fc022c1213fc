package recipes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

// A client without the service's credentials (none at all, or another
// principal's) can neither delete, write nor re-ACL any node the service's
// recipes made: lock and lease nodes, latch and selector nodes, group
// members, service instances, queue items and their locks, counters,
// barrier nodes, their parents and the namespace node. Every attempt
// fails with zk.ErrNoAuth (recipes.ErrNoAuth), and the nodes are intact.
// The service is known by each kind of identity of aclIdentities (a
// digest, an x509 client certificate, a SASL DIGEST-MD5 user) and gives
// its nodes to its own identities (creator-only, readable by anyone under
// "public"); the other principal has an identity of the same kind.
func TestACLNoRightsCannotTouchNodes(t *testing.T) {
	for _, id := range aclIdentities() {
		t.Run(id.kind, func(t *testing.T) {
			zkc := zktest.Start(t, id.server...)
			svc := connect(t, zkc.Servers(), append(id.alice(t, zkc), recipes.WithNamespace("acl"),
				recipes.WithACLProvider(recipes.ACLProviderFunc(creatorOnlyPublic)))...)
			runEveryRecipe(t, svc)
			before := walkACLs(t, svc, "/acl")
			hasACLID(t, svc, "/acl/locks/mutex", id.aliceID)
			others := []*recipes.Client{connect(t, zkc.Servers(), id.bob(t, zkc)...)}
			if id.anonymous {
				others = append(others, connect(t, zkc.Servers()))
			}
			for _, c := range others {
				cannotTouch(t, c, before)
			}
			assert.Equal(t, withoutReaped(before), withoutReaped(walkACLs(t, svc, "/acl")), "nodes were added, removed or changed")
		})
	}
}

// creatorOnlyPublic gives every node to its creator's identities
// (zk.AuthACL), and nodes under a "public" segment are readable by
// anyone too, as svcACL.
func creatorOnlyPublic(path string) []zk.ACL {
	acl := zk.AuthACL(zk.PermAll)
	if strings.Contains(path, "/public") {
		acl = append(acl, zk.WorldACL(zk.PermRead)...)
	}
	return acl
}

// cannotTouch checks that c may neither delete, set, re-ACL nor create
// under any of nodes.
func cannotTouch(t *testing.T, c *recipes.Client, nodes []aclNode) {
	t.Helper()
	conn := c.UnsafeConn()
	for _, n := range nodes {
		if reaped(n.path) {
			continue
		}
		err := conn.Delete(n.path, -1)
		if n.path == "/acl" { // its parent is "/", world-writable: not ours to protect
			assert.True(t, errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrNotEmpty), "delete %s: %v", n.path, err)
		} else {
			assert.ErrorIs(t, err, recipes.ErrNoAuth, "delete %s", n.path)
		}
		_, err = conn.Set(n.path, []byte("tampered"), -1)
		assert.ErrorIs(t, err, recipes.ErrNoAuth, "set %s", n.path)
		_, err = conn.SetACL(n.path, zk.WorldACL(zk.PermAll), -1)
		assert.ErrorIs(t, err, recipes.ErrNoAuth, "set the ACL of %s", n.path)
		_, err = conn.Create(n.path+"/intruder", nil, 0, zk.WorldACL(zk.PermAll))
		assert.ErrorIs(t, err, recipes.ErrNoAuth, "create under %s", n.path)
	}
}

// reaped reports whether path is a container that the recipes leave
// empty, which the server may delete at any time: a semaphore's locks/.
func reaped(path string) bool {
	return path == "/acl/sem/locks" || path == "/acl/semmutex/locks"
}

// withoutReaped returns nodes without those that may be reaped.
func withoutReaped(nodes []aclNode) []aclNode {
	var out []aclNode
	for _, n := range nodes {
		if !reaped(n.path) {
			out = append(out, n)
		}
	}
	return out
}

// noRightsCase is a recipe call made by a client without rights on a
// path the service's recipes protect.
type noRightsCase struct {
	name, path string
	call       func(ctx context.Context, c *recipes.Client) error
}

// A recipe run by a client without rights on a protected path fails at
// once, with an error that names the recipe and the path and wraps
// recipes.ErrNoAuth, rather than retrying until its ctx ends.
func TestACLNoRightsRecipesFailPromptly(t *testing.T) {
	zkc := zktest.Start(t)
	svc := connect(t, zkc.Servers(), recipes.WithNamespace("acl"),
		recipes.WithAuth("digest", []byte(svcAuth)), recipes.WithACLProvider(recipes.ACLProviderFunc(svcACL)))
	runEveryRecipe(t, svc)
	before := walkACLs(t, svc, "/acl")
	clients := map[string]*recipes.Client{
		"other principal": connect(t, zkc.Servers(), recipes.WithNamespace("acl"),
			recipes.WithAuth("digest", []byte(bobAuth)), recipes.WithACLProvider(recipes.ACLProviderFunc(svcACL))),
		"no credentials": connect(t, zkc.Servers(), recipes.WithNamespace("acl")),
	}
	for who, c := range clients {
		for _, tc := range noRightsCases() {
			t.Run(who+"/"+tc.name, func(t *testing.T) { noRightsCall(t, c, tc) })
		}
	}
	assert.Equal(t, withoutReaped(before), withoutReaped(walkACLs(t, svc, "/acl")), "a failed attempt left a node behind or removed one")
}

// noRightsCall runs tc with c and checks that it failed at once, plainly.
func noRightsCall(t *testing.T, c *recipes.Client, tc noRightsCase) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := tc.call(ctx, c)
	require.Error(t, err, "%s succeeded", tc.name)
	assert.ErrorIs(t, err, recipes.ErrNoAuth)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "it retried until ctx ended")
	assert.Less(t, time.Since(start), 3*time.Second, "it took too long to fail")
	assert.Contains(t, err.Error(), tc.path, "the error names the path")
	assert.Equal(t, 1, strings.Count(err.Error(), "check WithAuth"), "the error says what to check, once: %v", err)
	assert.Equal(t, 1, strings.Count(err.Error(), "zkrecipes: "), "one prefix: %v", err)
	t.Logf("%v", err)
}

// noRightsCases are the recipe calls of TestACLNoRightsRecipesFailPromptly.
func noRightsCases() []noRightsCase {
	return append(append(noRightsLockCases(), noRightsQueueCases()...), noRightsDataCases()...)
}

// noRightsLockCases are the lock, election and node recipes' calls.
func noRightsLockCases() []noRightsCase {
	return []noRightsCase{
		{"mutex acquire", "/locks/mutex", func(ctx context.Context, c *recipes.Client) error {
			m, err := mutex.New(c, "/locks/mutex")
			if err != nil {
				return err
			}
			_, err = m.Acquire(ctx)
			return err
		}},
		{"write lock acquire", "/rwlock", func(ctx context.Context, c *recipes.Client) error {
			rw, err := rwlock.New(c, "/rwlock")
			if err != nil {
				return err
			}
			_, err = rw.WriteLock().Acquire(ctx)
			return err
		}},
		{"semaphore acquire", "/sem", func(ctx context.Context, c *recipes.Client) error {
			s, err := semaphore.New(c, "/sem", 5)
			if err != nil {
				return err
			}
			_, err = s.Acquire(ctx)
			return err
		}},
		{"latch start", "/latch", func(ctx context.Context, c *recipes.Client) error {
			l, err := election.NewLatch(c, "/latch", "b")
			if err != nil {
				return err
			}
			defer l.Close(context.Background())
			return l.Start(ctx)
		}},
		{"group member start", "group member /group/m2", startNode(func(c *recipes.Client) (starter, error) {
			return nodes.NewGroupMember(c, "/group", "m2", nil)
		})},
		{"persistent node start", "/pnode", startNode(func(c *recipes.Client) (starter, error) {
			return nodes.NewPersistentNode(c, "/pnode/n-", nodes.EphemeralSequential, nil)
		})},
	}
}

// noRightsQueueCases are the discovery and queue calls.
func noRightsQueueCases() []noRightsCase {
	return []noRightsCase{
		{"discovery register", "/services/orders", func(ctx context.Context, c *recipes.Client) error {
			d, err := discovery.New(c, "/services")
			if err != nil {
				return err
			}
			defer d.Close(context.Background())
			if err := d.Start(ctx); err != nil {
				return err
			}
			return d.Register(ctx, &discovery.Instance{Name: "orders", ID: "o-2", Address: "10.0.0.6", Port: 8080})
		}},
		{"discovery query", "/services", func(ctx context.Context, c *recipes.Client) error {
			d, err := discovery.New(c, "/services")
			if err != nil {
				return err
			}
			defer d.Close(context.Background())
			if err := d.Start(ctx); err != nil {
				return err
			}
			_, err = d.QueryForInstances(ctx, "orders")
			return err
		}},
		{"queue put", "/queue", func(ctx context.Context, c *recipes.Client) error {
			q, err := queue.New(c, "/queue")
			if err != nil {
				return err
			}
			return q.Put(ctx, []byte("x"))
		}},
		{"simple queue offer", "/simple", func(ctx context.Context, c *recipes.Client) error {
			q, err := queue.NewSimple(c, "/simple")
			if err != nil {
				return err
			}
			return q.Offer(ctx, []byte("x"))
		}},
	}
}

// noRightsDataCases are the value and barrier calls.
func noRightsDataCases() []noRightsCase {
	return []noRightsCase{
		{"shared count start", "/count", startNode(func(c *recipes.Client) (starter, error) {
			return shared.NewCount(c, "/count", 1)
		})},
		{"atomic increment", "/atomic", func(ctx context.Context, c *recipes.Client) error {
			a, err := atomicval.NewInt64(c, "/atomic")
			if err != nil {
				return err
			}
			_, err = a.Increment(ctx)
			return err
		}},
		{"semaphore try acquire", "/sem", func(ctx context.Context, c *recipes.Client) error {
			s, err := semaphore.New(c, "/sem", 5)
			if err != nil {
				return err
			}
			_, err = s.TryAcquire(ctx)
			return err
		}},
		{"id queue put", "/idq", func(ctx context.Context, c *recipes.Client) error {
			q, err := queue.NewID(c, "/idq")
			if err != nil {
				return err
			}
			return q.Put(ctx, "id-2", []byte("x"))
		}},
		{"queue start", "/queue", startNode(func(c *recipes.Client) (starter, error) {
			return queue.New(c, "/queue", queue.WithConsumer(queue.ConsumerFunc(func(context.Context, *queue.Message) error { return nil })))
		})},
		{"ttl node start", "/ttl", startNode(func(c *recipes.Client) (starter, error) {
			return nodes.NewPersistentTTLNode(c, "/ttl", time.Minute, nil)
		})},
		{"shared value start", "/public/value", startNode(func(c *recipes.Client) (starter, error) {
			return shared.NewValue(c, "/public/value", nil)
		})},
		{"barrier set", "/barrier2", func(ctx context.Context, c *recipes.Client) error {
			b, err := barrier.New(c, "/barrier2")
			if err != nil {
				return err
			}
			return b.Set(ctx)
		}},
		{"barrier wait", "/barrier", func(ctx context.Context, c *recipes.Client) error {
			b, err := barrier.New(c, "/barrier")
			if err != nil {
				return err
			}
			return b.Wait(ctx)
		}},
		{"barrier remove", "/barrier", func(ctx context.Context, c *recipes.Client) error {
			b, err := barrier.New(c, "/barrier")
			if err != nil {
				return err
			}
			return b.Remove(ctx)
		}},
		{"double barrier enter", "/double", func(ctx context.Context, c *recipes.Client) error {
			d, err := barrier.NewDouble(c, "/double", 2)
			if err != nil {
				return err
			}
			return d.Enter(ctx)
		}},
	}
}

// starter is a recipe with Start and Close.
type starter interface {
	Start(context.Context) error
	Close(context.Context) error
}

// startNode makes a case of a recipe's Start.
func startNode[T starter](mk func(*recipes.Client) (T, error)) func(context.Context, *recipes.Client) error {
	return func(ctx context.Context, c *recipes.Client) error {
		r, err := mk(c)
		if err != nil {
			return err
		}
		defer r.Close(context.Background())
		if err := r.Start(ctx); err != nil {
			return err
		}
		if w, ok := any(r).(interface{ WaitReady(context.Context) error }); ok {
			return w.WaitReady(ctx) // Start makes the node in the background, as Curator's does
		}
		return nil
	}
}
