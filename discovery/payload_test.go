package discovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// zone is the payload of the typed tests: com.example.Details in Java.
type zone struct {
	Zone   string `json:"zone"`
	Weight int    `json:"weight"`
}

var detailsPayload = discovery.Payload[zone]{Class: "com.example.Details"}

// A Discovery typed on a Payload (WithPayload) reads only instances of
// its class, as Curator's typed ServiceDiscovery: its queries, caches and
// providers hand out those (and the null payload), each decoded to the Go
// type; another class, an untyped object (a Java Map) and a payload of
// the class that does not decode into the type are skipped, logged and
// counted, and QueryForInstance names them corrupt. Its Register and
// Update refuse a payload of another class.
func TestTypedPayload(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	register := func(id string, payload string) {
		t.Helper()
		require.NoError(t, w.Register(ctx, &discovery.Instance{Name: "s", ID: id, Port: 1, Payload: []byte(payload)}))
	}
	mine := &discovery.Instance{Name: "s", ID: "mine", Port: 1}
	require.NoError(t, detailsPayload.Set(mine, zone{Zone: "a", Weight: 2}))
	assert.Equal(t, `{"@class":"com.example.Details","zone":"a","weight":2}`, string(mine.Payload))
	require.NoError(t, w.Register(ctx, mine))
	register("other", `{"@class":"com.example.Other","zone":"b"}`)
	register("map", `{"zone":"c"}`)
	register("bad", `{"@class":"com.example.Details","weight":"heavy"}`)
	require.NoError(t, w.Register(ctx, &discovery.Instance{Name: "s", ID: "none", Port: 1}))

	d, err := discovery.New(connect(t, zkc.Servers()), "/services", discovery.WithPayload(detailsPayload))
	require.NoError(t, err)
	require.NoError(t, d.Start(ctx))
	defer d.Close(ctx)
	got, err := d.QueryForInstances(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, []string{"mine", "none"}, ids(got))
	assert.Equal(t, int64(3), d.Unreadable(), "other, map and bad skipped and counted")
	v, err := detailsPayload.Get(got[0])
	require.NoError(t, err)
	assert.Equal(t, zone{Zone: "a", Weight: 2}, v)
	v, err = detailsPayload.Get(got[1])
	require.NoError(t, err)
	assert.Zero(t, v, "a null payload is the zero value")
	for _, id := range []string{"other", "map", "bad"} {
		_, err = d.QueryForInstance(ctx, "s", id)
		assert.ErrorIs(t, err, recipes.ErrCorrupt, id)
	}
	assert.Equal(t, int64(6), d.Unreadable())

	// The untyped reader sees all five; Get on one of another class fails.
	all, err := w.QueryForInstances(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, []string{"bad", "map", "mine", "none", "other"}, ids(all))
	_, err = detailsPayload.Get(all[4])
	assert.ErrorIs(t, err, recipes.ErrCorrupt)
	v, err = detailsPayload.Get(all[2])
	require.NoError(t, err)
	assert.Equal(t, zone{Zone: "a", Weight: 2}, v, "decoded from the bytes")

	p, err := d.NewProvider("s")
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	defer p.Close(ctx)
	assert.Equal(t, []string{"mine", "none"}, ids(p.Instances()))
	assert.Equal(t, int64(9), d.Unreadable(), "the provider's cache skips the three too")
	v, err = detailsPayload.Get(p.Cache().Instances()[0])
	require.NoError(t, err)
	assert.Equal(t, "a", v.Zone)

	// Typed writes: another class is refused, the declared one goes.
	other := &discovery.Instance{Name: "s", ID: "mine2", Port: 1, Payload: []byte(`{"@class":"com.example.Other"}`)}
	assert.ErrorIs(t, d.Register(ctx, other), recipes.ErrInvalidArgument)
	other.Payload = []byte(`"a string"`)
	assert.ErrorIs(t, d.Register(ctx, other), recipes.ErrInvalidArgument, "a java.lang.String")
	require.NoError(t, detailsPayload.Set(other, zone{Zone: "d"}))
	require.NoError(t, d.Register(ctx, other))
	eventually(t, 30*time.Second, "the provider sees mine2", func() bool { return len(p.Instances()) == 3 })
	upd := other.Clone()
	upd.Payload = []byte(`{"zone":"e"}`)
	assert.ErrorIs(t, d.Update(ctx, upd), recipes.ErrInvalidArgument, "a java.util.LinkedHashMap")
	require.NoError(t, detailsPayload.Set(upd, zone{Zone: "e"}))
	require.NoError(t, d.Update(ctx, upd))
	eventually(t, 30*time.Second, "the cache holds mine2's update", func() bool {
		for _, in := range p.Cache().Instances() {
			if v, err := detailsPayload.Get(in); in.ID == "mine2" && err == nil && v.Zone == "e" {
				return true
			}
		}
		return false
	})
}
