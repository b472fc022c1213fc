package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Environment of a helper process.
const (
	dhEnvRole    = "ZKD_HELPER"  // "register"
	dhEnvServers = "ZKD_SERVERS" // comma-separated host:port
	dhEnvID      = "ZKD_ID"      // instance id
)

var dhHelpers = testutil.Helpers{Test: "TestDiscoveryHelperProcess", RoleEnv: dhEnvRole, Timeout: 3 * time.Minute}

// TestDiscoveryHelperProcess is not a test: it is the body of the helper
// processes the interop test starts. It returns at once unless ZKD_HELPER
// is set.
func TestDiscoveryHelperProcess(t *testing.T) {
	dhHelpers.Run(map[string]func() error{"register": dhRegister})
}

// interopPayload is CuratorDiscovery.java's Details.
type interopPayload struct {
	Description string            `json:"description"`
	Weight      int               `json:"weight"`
	Meta        map[string]string `json:"meta"`
}

// interopDetails declares the payload of CuratorDiscovery.java's typed
// ServiceDiscovery once: the Go type and the Java class.
var interopDetails = discovery.Payload[interopPayload]{Class: interop.CuratorDiscoveryPayloadClass}

// otherPayload is CuratorDiscovery.java's Other, another class.
type otherPayload struct {
	Note string `json:"note"`
}

var interopOther = discovery.Payload[otherPayload]{Class: interop.CuratorDiscoveryOtherClass}

func goInstance(t testing.TB, id string, port int) *discovery.Instance {
	in := &discovery.Instance{Name: "svc", ID: id, Address: "127.0.0.1", Port: port,
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}")}
	if err := interopDetails.Set(in, interopPayload{Description: "go " + id, Weight: 1, Meta: map[string]string{"lang": "go"}}); err != nil {
		t.Fatal(err)
	}
	return in
}

// dhRegister registers ZKD_ID (2 s session), prints READY and stays
// until stdin ends (or it is killed).
func dhRegister() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := testutil.Dial(ctx, strings.Split(os.Getenv(dhEnvServers), ","), recipes.WithSessionTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	d, err := discovery.New(c, "/services", discovery.WithPayload(interopDetails))
	if err != nil {
		return err
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	id := os.Getenv(dhEnvID)
	in := &discovery.Instance{Name: "svc", ID: id, Address: "127.0.0.1", Port: 7000}
	if err := interopDetails.Set(in, interopPayload{Description: "go " + id, Weight: 1}); err != nil {
		return err
	}
	if err := d.Register(ctx, in); err != nil {
		return err
	}
	fmt.Println("READY")
	_, _ = os.Stdin.Read(make([]byte, 1))
	return d.Close(ctx)
}

// javaAsk sends cmd to a Curator process until it prints want.
func javaAsk(t *testing.T, ctx context.Context, p *interop.Proc, cmd, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		require.NoError(t, p.Send(cmd))
		wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := p.WaitLine(wctx, want)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			lines := p.Lines()
			if len(lines) > 5 {
				lines = lines[len(lines)-5:]
			}
			t.Fatalf("%s never printed %q; its last lines:\n%s", p.Name, want, strings.Join(lines, "\n"))
		}
	}
}

// Go and Curator service processes register on one path and find each
// other: a typed Java payload read from a Go registration, a Java
// registration read by Go; the Go holder's and the Java holder's sessions
// expire (both come back), a Go and a Java process are SIGKILLed (both go);
// every process's final view equals the live instances.
func TestDiscoveryInteropCurator(t *testing.T) {
	testutil.NeedCurator(t)
	zkc := testutil.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	servers := strings.Join(zkc.Servers(), ",")
	startJava := func(id, connect string) *interop.Proc {
		p, err := interop.StartCuratorDiscovery(ctx, dir, connect, "/services", "svc", id, "9000", "java "+id, "4000")
		if errors.Is(err, interop.ErrUnavailable) {
			testutil.Unavailable(t, err)
		}
		require.NoError(t, err)
		t.Cleanup(p.Kill)
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		defer wcancel()
		require.NoError(t, p.WaitLine(wctx, "READY"))
		return p
	}

	// The Go holder, through a proxy (to expire its session).
	gproxy := zktest.NewProxy(t, zkc.Servers()[0])
	gc := connect(t, []string{gproxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	g1 := newDiscovery(t, gc, "/services", discovery.WithPayload(interopDetails))
	require.NoError(t, g1.Register(ctx, goInstance(t, "g1", 8001)))
	// A Go process to SIGKILL.
	g2 := dhHelpers.Start(t, "g2", "register", dhEnvServers+"="+servers, dhEnvID+"=g2")
	_, err := g2.WaitLine(ctx, "READY")
	require.NoError(t, err)
	// The Java holder through a proxy; a Java process to SIGKILL.
	jproxy := zktest.NewProxy(t, zkc.Servers()[0])
	j1 := startJava("j1", jproxy.Addr())
	j2 := startJava("j2", servers)

	// The Go reader, typed as the Java side: queries and a provider's cache.
	reader := newDiscovery(t, connect(t, zkc.Servers()), "/services", discovery.WithPayload(interopDetails))
	prov, err := reader.NewProvider("svc")
	require.NoError(t, err)
	require.NoError(t, prov.Start(ctx))
	defer prov.Close(ctx)
	goView := func(want string) {
		t.Helper()
		eventually(t, 30*time.Second, "the Go views are "+want, func() bool {
			insts, err := reader.QueryForInstances(ctx, "svc")
			return err == nil && strings.Join(ids(insts), ",") == want &&
				strings.Join(ids(prov.Cache().Instances()), ",") == want
		})
	}
	allViews := func(want string, javas ...*interop.Proc) {
		t.Helper()
		goView(want)
		for _, j := range javas {
			javaAsk(t, ctx, j, "QUERY", "QUERY "+want)
			javaAsk(t, ctx, j, "CACHE", "CACHE "+want)
		}
	}
	allViews("g1,g2,j1,j2", j1, j2)

	// Java reads the Go registrations with its typed payload class.
	javaAsk(t, ctx, j1, "QUERY", "PAYLOAD g1 "+interop.CuratorDiscoveryPayloadClass+" go g1")
	javaAsk(t, ctx, j2, "QUERY", "PAYLOAD g2 "+interop.CuratorDiscoveryPayloadClass+" go g2")
	// Go reads the Java registration and its payload.
	jin, err := reader.QueryForInstance(ctx, "svc", "j1")
	require.NoError(t, err)
	require.NotNil(t, jin)
	assert.Equal(t, interop.CuratorDiscoveryPayloadClass, jin.PayloadClass())
	jp, err := interopDetails.Get(jin)
	require.NoError(t, err)
	assert.Equal(t, interopPayload{Description: "java j1", Weight: 1, Meta: map[string]string{"lang": "java"}}, jp)
	assert.Equal(t, "http://127.0.0.1:9000", jin.BuildURI(nil))
	assert.Equal(t, discovery.Dynamic, jin.ServiceType)
	assert.Zero(t, reader.Unreadable())

	// Expire each holder's session: each comes back.
	expire := func(p *zktest.Proxy, id string) {
		t.Helper()
		before, err := reader.QueryForInstance(ctx, "svc", id)
		require.NoError(t, err)
		require.NotNil(t, before)
		p.Blackhole()
		eventually(t, 30*time.Second, id+" gone with its session", func() bool {
			in, err := reader.QueryForInstance(ctx, "svc", id)
			return err == nil && in == nil
		})
		p.Restore()
		eventually(t, 30*time.Second, id+" registered again", func() bool {
			in, err := reader.QueryForInstance(ctx, "svc", id)
			return err == nil && in != nil
		})
	}
	expire(gproxy, "g1")
	expire(jproxy, "j1")
	allViews("g1,g2,j1,j2", j1, j2)

	// SIGKILL a Go and a Java process: their instances go with their
	// sessions.
	g2.Kill()
	j2.Kill()
	allViews("g1,j1", j1)
	kids, _, err := gc.Children(ctx, "/services/svc")
	require.NoError(t, err)
	sort.Strings(kids)
	assert.Equal(t, []string{"g1", "j1"}, kids, "the live instances")
	t.Logf("server %s; Curator from %s", zkc.Version(), map[bool]string{true: "CURATOR_CLASSPATH", false: interop.JavaDir}[os.Getenv(interop.ClasspathEnv) != ""])

	// Java unregisters on close; Go sees it go.
	require.NoError(t, j1.Send("QUIT"))
	require.NoError(t, j1.WaitLine(ctx, "BYE"))
	goView("g1")
}

// STATIC and PERMANENT instances across Go and Curator: each side reads
// the other's with its type; on Close each side deletes its STATIC
// instance; Go's PERMANENT instance outlives Go's Close and Curator's
// close, while Curator's close deletes its own PERMANENT instance too
// (CURATOR-94, in 5.4 and 5.7.1 alike), which this test pins down.
func TestDiscoveryInteropCuratorTypes(t *testing.T) {
	testutil.NeedCurator(t)
	zkc := testutil.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	j, err := interop.StartCuratorDiscovery(ctx, t.TempDir(), strings.Join(zkc.Servers(), ","), "/services", "svc", "j1", "9000", "java", "4000")
	if errors.Is(err, interop.ErrUnavailable) {
		testutil.Unavailable(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(j.Kill)
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	require.NoError(t, j.WaitLine(wctx, "READY"))

	g := newDiscovery(t, connect(t, zkc.Servers()), "/services", discovery.WithPayload(interopDetails))
	gs, gp := goInstance(t, "gs", 8001), goInstance(t, "gp", 8002)
	gs.ServiceType, gp.ServiceType = discovery.Static, discovery.Permanent
	require.NoError(t, g.Register(ctx, gs))
	require.NoError(t, g.Register(ctx, gp))
	require.NoError(t, j.Send("REGISTER js STATIC"))
	require.NoError(t, j.WaitLine(ctx, "REGISTERED js"))
	require.NoError(t, j.Send("REGISTER jp PERMANENT"))
	require.NoError(t, j.WaitLine(ctx, "REGISTERED jp"))

	// Java reads Go's types and typed payloads; Go reads Java's.
	javaAsk(t, ctx, j, "TYPES", "TYPES gp:PERMANENT,gs:STATIC,j1:DYNAMIC,jp:PERMANENT,js:STATIC")
	javaAsk(t, ctx, j, "QUERY", "PAYLOAD gp "+interop.CuratorDiscoveryPayloadClass+" go gp")
	reader := newDiscovery(t, connect(t, zkc.Servers()), "/services", discovery.WithPayload(interopDetails))
	types := func() string {
		insts, err := reader.QueryForInstances(ctx, "svc")
		require.NoError(t, err)
		var ts []string
		for _, in := range insts {
			ts = append(ts, in.ID+":"+string(in.ServiceType))
		}
		sort.Strings(ts)
		return strings.Join(ts, ",")
	}
	assert.Equal(t, "gp:PERMANENT,gs:STATIC,j1:DYNAMIC,jp:PERMANENT,js:STATIC", types())
	jp, err := reader.QueryForInstance(ctx, "svc", "jp")
	require.NoError(t, err)
	require.NotNil(t, jp)
	p, err := interopDetails.Get(jp)
	require.NoError(t, err)
	assert.Equal(t, "java jp", p.Description)

	// Go's Close deletes its STATIC instance and leaves its PERMANENT one.
	require.NoError(t, g.Close(ctx))
	eventually(t, 30*time.Second, "gs gone after Go's Close", func() bool {
		in, err := reader.QueryForInstance(ctx, "svc", "gs")
		return err == nil && in == nil
	})
	javaAsk(t, ctx, j, "TYPES", "TYPES gp:PERMANENT,j1:DYNAMIC,jp:PERMANENT,js:STATIC")

	// Curator's close (ServiceDiscovery.close) unregisters every instance
	// it registered, PERMANENT included (CURATOR-94); Go's PERMANENT one
	// stays.
	require.NoError(t, j.Send("QUIT"))
	require.NoError(t, j.WaitLine(ctx, "BYE"))
	eventually(t, 30*time.Second, "j1, js and jp gone after Curator's close", func() bool {
		insts, err := reader.QueryForInstances(ctx, "svc")
		return err == nil && len(insts) == 1
	})
	t.Logf("server %s: after both Close calls: %s", zkc.Version(), types())
	assert.Equal(t, "gp:PERMANENT", types(), "Go's PERMANENT instance outlives both Close calls; Curator's does not (CURATOR-94)")
}

// Typed payloads both ways, and a class mismatch each way: a Go
// discovery typed on CuratorDiscovery$Details (WithPayload) and Curator's
// ServiceDiscovery typed on it read each other's instance as their type;
// an instance of another class, CuratorDiscovery$Other, registered by
// Curator and by Go, is skipped and counted by the typed Go discovery (its
// queries and its provider's cache), read by an untyped one and by
// Curator's discovery typed on Other. Curator's discovery typed on
// Details fails its whole query on them (ClassCastException, as the
// catalogue says) and its cache leaves them out.
func TestDiscoveryInteropCuratorPayloadClass(t *testing.T) {
	testutil.NeedCurator(t)
	zkc := testutil.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	j, err := interop.StartCuratorDiscovery(ctx, t.TempDir(), strings.Join(zkc.Servers(), ","), "/services", "svc", "j1", "9000", "java j1", "4000")
	if errors.Is(err, interop.ErrUnavailable) {
		testutil.Unavailable(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(j.Kill)
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	require.NoError(t, j.WaitLine(wctx, "READY"))

	g := newDiscovery(t, connect(t, zkc.Servers()), "/services", discovery.WithPayload(interopDetails))
	require.NoError(t, g.Register(ctx, goInstance(t, "g1", 8001)))
	prov, err := g.NewProvider("svc")
	require.NoError(t, err)
	require.NoError(t, prov.Start(ctx))
	defer prov.Close(ctx)

	// Each typed side reads the other's instance as its type.
	javaAsk(t, ctx, j, "QUERY", "PAYLOAD g1 "+interop.CuratorDiscoveryPayloadClass+" go g1")
	jin, err := g.QueryForInstance(ctx, "svc", "j1")
	require.NoError(t, err)
	require.NotNil(t, jin)
	jp, err := interopDetails.Get(jin)
	require.NoError(t, err)
	assert.Equal(t, interopPayload{Description: "java j1", Weight: 1, Meta: map[string]string{"lang": "java"}}, jp)
	assert.Zero(t, g.Unreadable())

	// Another class from each side; the typed Go discovery refuses to
	// register one.
	require.NoError(t, j.Send("REGISTEROTHER jo"))
	require.NoError(t, j.WaitLine(ctx, "REGISTERED jo"))
	gon := &discovery.Instance{Name: "svc", ID: "go", Address: "127.0.0.1", Port: 8002}
	require.NoError(t, interopOther.Set(gon, otherPayload{Note: "go go"}))
	assert.ErrorIs(t, g.Register(ctx, gon), recipes.ErrInvalidArgument)
	untyped := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	require.NoError(t, untyped.Register(ctx, gon))

	// The typed Go discovery skips and counts them: a query (2), a lookup
	// (1), its provider's cache (2).
	insts, err := g.QueryForInstances(ctx, "svc")
	require.NoError(t, err)
	assert.Equal(t, []string{"g1", "j1"}, ids(insts))
	_, err = g.QueryForInstance(ctx, "svc", "jo")
	assert.ErrorIs(t, err, recipes.ErrCorrupt)
	eventually(t, 30*time.Second, "the provider's cache skipped jo and go", func() bool { return g.Unreadable() == 5 })
	assert.Equal(t, []string{"g1", "j1"}, ids(prov.Instances()))
	p, err := interopDetails.Get(prov.Instance())
	require.NoError(t, err)
	assert.Contains(t, []string{"go g1", "java j1"}, p.Description)

	// The untyped Go discovery reads all four, each with its class.
	all, err := untyped.QueryForInstances(ctx, "svc")
	require.NoError(t, err)
	var classes []string
	for _, in := range all {
		classes = append(classes, in.ID+":"+in.PayloadClass())
	}
	assert.Equal(t, []string{"g1:" + interop.CuratorDiscoveryPayloadClass, "go:" + interop.CuratorDiscoveryOtherClass,
		"j1:" + interop.CuratorDiscoveryPayloadClass, "jo:" + interop.CuratorDiscoveryOtherClass}, classes)
	o, err := interopOther.Get(all[3])
	require.NoError(t, err)
	assert.Equal(t, "java jo", o.Note)

	// Curator typed on Other reads Go's Other; typed on Details it fails
	// the whole query, and its cache leaves both out.
	javaAsk(t, ctx, j, "GETOTHER go", "OTHER go "+interop.CuratorDiscoveryOtherClass+" go go")
	javaAsk(t, ctx, j, "QUERY", "QUERYERROR java.lang.ClassCastException: Cannot cast "+interop.CuratorDiscoveryOtherClass+" to "+interop.CuratorDiscoveryPayloadClass)
	javaAsk(t, ctx, j, "CACHE", "CACHE g1,j1")
	t.Logf("server %s", zkc.Version())
}
