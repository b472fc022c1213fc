package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/discovery"
)

// A discovery base path is listed as its services and their instances
// (address, port, type, age, session), an unreadable instance as such; a
// service path as that service; -json gives the same.
func TestDiscovery(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	base := runRoot + "/services"
	c := connectT(t, zkc)
	d, err := discovery.New(c, base)
	require.NoError(t, err)
	require.NoError(t, d.Start(ctx))
	t.Cleanup(func() { d.Close(ctx) })
	payload, err := discovery.EncodePayload(map[string]int{"w": 1}, "com.example.Details")
	require.NoError(t, err)
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "orders", ID: "o-1", Address: "10.0.0.1", Port: 8080, Payload: payload,
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}")}))
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "orders", ID: "o-2", Address: "10.0.0.2", Port: 8081, SSLPort: 8443, ServiceType: discovery.Permanent}))
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "billing", ID: "b-1", Address: "10.0.0.3", Port: 9090}))
	_, err = c.Create(ctx, base+"/billing/broken", []byte("{"), 0)
	require.NoError(t, err)

	out := inspectOut(t, zkc, base)
	t.Logf("zkinspect %s:\n%s", base, out)
	// The node that does not read as an instance is counted apart: a
	// query returns 3 instances, not 4.
	assert.Contains(t, out, base+": service discovery base path (curator-x-discovery), 2 services, 3 instances, 1 unreadable")
	assert.Contains(t, out, "service orders ("+base+"/orders): 2 instances")
	assert.Contains(t, out, "service billing ("+base+"/billing): 1 instance, 1 unreadable")
	lines := strings.Split(out, "\n")
	find := func(node string) string {
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), node+" ") {
				return l
			}
		}
		t.Fatalf("no line for %s in:\n%s", node, out)
		return ""
	}
	o1 := find("o-1")
	for _, want := range []string{"10.0.0.1", "8080", "DYNAMIC", "0x", "http://10.0.0.1:8080", "com.example.Details"} {
		assert.Contains(t, o1, want)
	}
	o2 := find("o-2")
	for _, want := range []string{"10.0.0.2", "8081 (ssl 8443)", "PERMANENT", "persistent"} {
		assert.Contains(t, o2, want)
	}
	assert.Contains(t, find("broken"), "unreadable: ")

	one := inspectOut(t, zkc, base+"/orders")
	assert.NotContains(t, one, "base path")
	assert.Contains(t, one, "service orders ("+base+"/orders): 2 instances")

	var rep Report
	require.NoError(t, json.Unmarshal([]byte(inspectOut(t, zkc, "-json", base)), &rep))
	assert.Equal(t, "discovery", rep.Mode)
	require.NotNil(t, rep.Discovery)
	assert.Equal(t, base, rep.Discovery.Base)
	require.Len(t, rep.Discovery.Services, 2)
	assert.Equal(t, "billing", rep.Discovery.Services[0].Name)
	assert.Equal(t, 1, rep.Discovery.Services[0].Readable)
	assert.Equal(t, 1, rep.Discovery.Services[0].Unreadable)
	orders := rep.Discovery.Services[1]
	require.Len(t, orders.Instances, 2)
	assert.Equal(t, "o-1", orders.Instances[0].ID)
	assert.Equal(t, 8080, orders.Instances[0].Port)
	assert.Equal(t, "DYNAMIC", orders.Instances[0].Type)
	assert.NotEmpty(t, orders.Instances[0].Session)
	assert.True(t, orders.Instances[0].Enabled)
}
