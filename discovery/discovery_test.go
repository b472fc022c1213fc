package discovery_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	connect    = testutil.Connect
	eventually = testutil.Eventually
)

func newDiscovery(t *testing.T, c *recipes.Client, base string, opts ...discovery.Option) *discovery.Discovery {
	t.Helper()
	d, err := discovery.New(c, base, opts...)
	require.NoError(t, err)
	require.NoError(t, d.Start(context.Background()))
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

func ids(insts []*discovery.Instance) []string {
	out := []string{}
	for _, i := range insts {
		out = append(out, i.ID)
	}
	return out
}

// Every service type registers, is queried, updated and unregistered;
// Close deletes all but the Permanent instance; a missing base path is an
// empty answer everywhere.
func TestRegisterQueryUnregister(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())
	d := newDiscovery(t, c, "/services")

	names, err := d.QueryForNames(ctx)
	require.NoError(t, err)
	assert.Empty(t, names, "no base path: no names (Curator throws NoNode)")
	insts, err := d.QueryForInstances(ctx, "orders")
	require.NoError(t, err)
	assert.Empty(t, insts)
	one, err := d.QueryForInstance(ctx, "orders", "x")
	require.NoError(t, err)
	assert.Nil(t, one)

	types := map[string]discovery.ServiceType{"dyn": discovery.Dynamic, "seq": discovery.DynamicSequential, "static": discovery.Static, "perm": discovery.Permanent}
	for id, st := range types {
		payload, err := discovery.EncodePayload(map[string]string{"zone": "eu"}, "com.example.Details")
		require.NoError(t, err)
		require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "orders", ID: id, Address: "10.0.0.1", Port: 8080,
			ServiceType: st, Payload: payload, URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}")}))
	}
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "billing", ID: "b1", Port: 9}))

	names, err = d.QueryForNames(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"billing", "orders"}, names)
	insts, err = d.QueryForInstances(ctx, "orders")
	require.NoError(t, err)
	require.Len(t, insts, 4)
	assert.Equal(t, []string{"dyn", "perm", "seq", "static"}, ids(insts))
	for _, in := range insts {
		assert.Equal(t, types[in.ID], in.ServiceType)
		assert.Equal(t, "com.example.Details", in.PayloadClass())
		assert.NotZero(t, in.RegistrationTimeUTC)
		assert.Equal(t, "http://10.0.0.1:8080", in.BuildURI(nil))
	}
	// The node of each type.
	kids, _, err := admin.Children(ctx, "/services/orders")
	require.NoError(t, err)
	var seqNode string
	for _, k := range kids {
		if len(k) > 3 && k[:3] == "seq" {
			seqNode = k
		}
	}
	assert.Len(t, seqNode, len("seq")+10, "DYNAMIC_SEQUENTIAL: id plus the sequence: %v", kids)
	for node, ephemeral := range map[string]bool{"dyn": true, seqNode: true, "static": false, "perm": false} {
		_, st, err := admin.Get(ctx, "/services/orders/"+node)
		require.NoError(t, err)
		assert.Equal(t, ephemeral, st.EphemeralOwner != 0, node)
	}

	// Update writes the node; the registered copy is the new one.
	upd := &discovery.Instance{Name: "orders", ID: "dyn", Address: "10.0.0.2", Port: 8081}
	require.NoError(t, d.Update(ctx, upd))
	got, err := d.QueryForInstance(ctx, "orders", "dyn")
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.2", got.Address)
	assert.Equal(t, discovery.Dynamic, got.ServiceType)
	assert.ErrorIs(t, d.Update(ctx, &discovery.Instance{Name: "orders", ID: "nope"}), recipes.ErrInvalidArgument)

	require.NoError(t, d.Unregister(ctx, "billing", "b1"))
	insts, err = d.QueryForInstances(ctx, "billing")
	require.NoError(t, err)
	assert.Empty(t, insts)
	require.NoError(t, d.Unregister(ctx, "billing", "b1"), "twice")

	require.NoError(t, d.Close(ctx))
	kids, _, err = admin.Children(ctx, "/services/orders")
	require.NoError(t, err)
	assert.Equal(t, []string{"perm"}, kids, "Close leaves the PERMANENT instance (CURATOR-94)")

	// Another process unregisters the permanent instance left behind.
	d2 := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	require.NoError(t, d2.Unregister(ctx, "orders", "perm"))
	ok, _, err := admin.Exists(ctx, "/services/orders/perm")
	require.NoError(t, err)
	assert.False(t, ok)
}

// An instance that cannot be read is skipped by the query, logged and
// counted; it never fails the query of many; the query of that one
// instance is an ErrCorrupt error.
func TestUnreadableInstanceSkipped(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := connect(t, zkc.Servers())
	d := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "s", ID: "good", Port: 1}))
	_, err := admin.Create(ctx, "/services/s/bad", []byte(`{"name":"s","id":`), 0)
	require.NoError(t, err)
	_, err = admin.Create(ctx, "/services/s/empty", nil, 0)
	require.NoError(t, err)
	insts, err := d.QueryForInstances(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, []string{"good"}, ids(insts))
	assert.Equal(t, int64(2), d.Unreadable())
	_, err = d.QueryForInstance(ctx, "s", "bad")
	assert.ErrorIs(t, err, recipes.ErrCorrupt)
	assert.ErrorContains(t, err, "zkrecipes: service discovery /services: query for instance s/bad:")
	assert.Equal(t, int64(3), d.Unreadable())
}

// A connection cut that the session survives re-registers nothing (no
// delete, no create, no write: CURATOR-320); a deleted node and an expired
// session bring the instance back with its latest update (CURATOR-146/181).
func TestReRegistrationWithoutChurn(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	admin := connect(t, zkc.Servers())
	d := newDiscovery(t, c, "/services")
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "s", ID: "i", Port: 1}))
	const node = "/services/s/i"
	_, st0, err := admin.Get(ctx, node)
	require.NoError(t, err)

	reconnected := make(chan struct{}, 4)
	remove := c.Listen(func(s recipes.State) {
		if s == recipes.StateReconnected {
			reconnected <- struct{}{}
		}
	})
	defer remove()
	proxy.Cut()
	select {
	case <-reconnected:
	case <-ctx.Done():
		t.Fatal("no reconnection")
	}
	// A write after the reconnection orders the check below after
	// anything the registration would have done on reconnecting.
	require.NoError(t, d.Update(ctx, &discovery.Instance{Name: "s", ID: "i", Port: 2}))
	_, st1, err := admin.Get(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, st0.Czxid, st1.Czxid, "not deleted and made again on reconnecting")
	assert.Equal(t, st0.Version+1, st1.Version, "one write: the update")

	// Deleted by someone: back with the latest update.
	require.NoError(t, admin.Delete(ctx, node, -1))
	eventually(t, 10*time.Second, "the instance made again", func() bool {
		data, _, err := admin.Get(ctx, node)
		if err != nil {
			return false
		}
		in, err := discovery.Decode(data)
		return err == nil && in.Port == 2
	})

	// The session expires: back with the latest update.
	require.NoError(t, d.Update(ctx, &discovery.Instance{Name: "s", ID: "i", Port: 3}))
	_, st2, err := admin.Get(ctx, node)
	require.NoError(t, err)
	proxy.Blackhole()
	eventually(t, 20*time.Second, "the server expires the session", func() bool {
		_, st, err := admin.Get(ctx, node)
		return errors.Is(err, zk.ErrNoNode) || (err == nil && st.Czxid != st2.Czxid)
	})
	proxy.Restore()
	eventually(t, 20*time.Second, "the instance made again in the new session", func() bool {
		data, st, err := admin.Get(ctx, node)
		if err != nil || st.Czxid == st2.Czxid {
			return false
		}
		in, err := discovery.Decode(data)
		return err == nil && in.Port == 3 && st.EphemeralOwner != st2.EphemeralOwner
	})
}

// Unregister never races a re-registration: with the node deleted by
// someone just before, it stays gone after Unregister (CURATOR-164).
func TestUnregisterNoResurrection(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := connect(t, zkc.Servers())
	d := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	for i := 0; i < 20; i++ {
		require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "s", ID: "i", Port: 1}))
		_ = admin.Delete(ctx, "/services/s/i", -1)
		require.NoError(t, d.Unregister(ctx, "s", "i"))
	}
	// A write after the last unregister: a late create would be ordered
	// before the read of children below only if made; none must be.
	_, err := admin.Create(ctx, "/services/s/marker", nil, 0)
	require.NoError(t, err)
	kids, _, err := admin.Children(ctx, "/services/s")
	require.NoError(t, err)
	assert.Equal(t, []string{"marker"}, kids)
}

// An ephemeral node of another session at the instance's path (a
// crashed predecessor's, whose session has not expired yet) is deleted
// and the registration made at once, as Curator's: the instance id is the
// instance's identity. A restart no longer waits out a session timeout.
func TestRegisterTakesOverAPredecessorsNode(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := connect(t, zkc.Servers(), recipes.WithSessionTimeout(30*time.Second))
	admin := connect(t, zkc.Servers())
	_, err := old.CreateWithParents(ctx, "/services/s/i", []byte(`{"name":"s","id":"i","port":1}`), zk.FlagEphemeral)
	require.NoError(t, err)
	c := connect(t, zkc.Servers())
	d := newDiscovery(t, c, "/services")
	short, scancel := context.WithTimeout(ctx, 5*time.Second) // far shorter than the old session's timeout
	defer scancel()
	require.NoError(t, d.Register(short, &discovery.Instance{Name: "s", ID: "i", Port: 2}))
	in, err := d.QueryForInstance(ctx, "s", "i")
	require.NoError(t, err)
	assert.Equal(t, 2, in.Port)
	_, st, err := admin.Get(ctx, "/services/s/i")
	require.NoError(t, err)
	assert.Equal(t, c.SessionID(), st.EphemeralOwner, "the node is the new registration's")
}
