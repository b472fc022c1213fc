package interop_test

// Curator over TLS (issue 35): a Curator process and a Go process, each
// with a client certificate of its own, share a mutex and a discovery
// path on a TLS-only server (a secureClientPort, ssl.clientAuth=need, the
// x509 provider). The Java client connects through the system properties
// an operator puts in CLIENT_JVMFLAGS (interop.ClientTLSProperties), the
// Go one through recipes.WithTLS. Both legs run it: Debian's ZooKeeper
// 3.8.0 with Curator 5.4, and 3.9.6 with Curator 5.7.1 (make test-39).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// tlsPeers is a TLS-only server, a Go client of it (subject CN=go-peer)
// and the java options of a Curator client of it (the cluster's client
// certificate, CN=zktest-client, in a PEM key store).
type tlsPeers struct {
	zkc  *zktest.Cluster
	goc  *recipes.Client
	dir  string
	java []string
}

// startTLSPeers starts them; a missing ZooKeeper or Curator skips the
// test, or fails it under CI.
func startTLSPeers(t *testing.T, ctx context.Context) tlsPeers {
	t.Helper()
	testutil.NeedCurator(t)
	zkc, err := zktest.Launch(1, zktest.WithTLS())
	if errors.Is(err, zktest.ErrUnavailable) {
		testutil.Unavailable(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = zkc.Close() })
	cfg, err := zkc.ClientTLSAs("go-peer")
	require.NoError(t, err)
	goc, err := recipes.Connect(ctx, zkc.Servers(), recipes.WithTLS(cfg))
	require.NoError(t, err)
	t.Cleanup(func() { goc.Close(context.Background()) })
	dir := t.TempDir()
	ca, cert, key := zkc.TLSFiles()
	store := filepath.Join(dir, "keystore.pem")
	require.NoError(t, interop.WritePEMKeyStore(store, cert, key))
	curator := interop.JavaDir + " (Curator 5.4)"
	if os.Getenv(interop.ClasspathEnv) != "" {
		curator = interop.ClasspathEnv
	}
	t.Logf("server %s; Curator from %s", zkc.Version(), curator)
	return tlsPeers{zkc: zkc, goc: goc, dir: dir, java: interop.ClientTLSProperties(ca, store)}
}

// waitParticipants waits until m has n participants.
func waitParticipants(t *testing.T, ctx context.Context, m *mutex.Mutex, n int) {
	t.Helper()
	for {
		ps, err := m.Participants(ctx)
		require.NoError(t, err)
		if len(ps) == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d participants, want %d: %v", len(ps), n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// notPrinted fails if p prints want within d.
func notPrinted(t *testing.T, p *interop.Proc, want string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err := p.WaitLine(ctx, want)
	require.Error(t, err, "%s printed %q while the other side held", p.Name, want)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestCuratorTLSMutex: the Go and the Curator holder of one mutex path,
// both over TLS, hold in turn, and while one holds the other's acquire
// does not succeed: Curator waits behind Go's hold, and Go's TryAcquire
// fails and its Acquire waits behind Curator's.
func TestCuratorTLSMutex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := startTLSPeers(t, ctx)
	const path = "/interop/tls/mutex"
	m, err := mutex.New(p.goc, path)
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)

	j, err := interop.StartCuratorWith(ctx, p.dir, p.java, "holder", p.zkc.ConnectString(), path)
	require.NoError(t, err)
	t.Cleanup(j.Kill)
	waitParticipants(t, ctx, m, 2) // Curator's node is queued behind ours
	notPrinted(t, j, "ACQUIRED", 500*time.Millisecond)
	require.NoError(t, lease.Release(ctx))
	require.NoError(t, j.WaitLine(ctx, "ACQUIRED"))

	_, err = m.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrNotAcquired, "Go's TryAcquire while Curator holds")
	type acquired struct {
		l   *mutex.Lease
		err error
	}
	got := make(chan acquired, 1)
	go func() {
		l, err := m.Acquire(ctx)
		got <- acquired{l, err}
	}()
	waitParticipants(t, ctx, m, 2) // ours is queued behind Curator's
	select {
	case a := <-got:
		t.Fatalf("Go acquired while Curator holds: %v", a.err)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, j.Send("release"))
	require.NoError(t, j.WaitLine(ctx, "RELEASED"))
	a := <-got
	require.NoError(t, a.err, "Go's Acquire after Curator released")
	require.NoError(t, j.Wait())
	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1, "Curator's node is gone, ours holds")
	require.NoError(t, a.l.Release(ctx))
}

// tlsDetails is CuratorDiscovery.java's Details payload.
type tlsDetails struct {
	Description string            `json:"description"`
	Weight      int               `json:"weight"`
	Meta        map[string]string `json:"meta"`
}

var tlsPayload = discovery.Payload[tlsDetails]{Class: interop.CuratorDiscoveryPayloadClass}

// TestCuratorTLSDiscovery: over TLS, a Curator service process and a Go
// one register on one base path, and each finds the other's instance,
// with its typed payload.
func TestCuratorTLSDiscovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := startTLSPeers(t, ctx)
	const base = "/interop/tls/services"
	j, err := interop.StartCuratorDiscoveryWith(ctx, p.dir, p.java,
		p.zkc.ConnectString(), base, "svc", "java-1", "9000", "from-java", "10000")
	require.NoError(t, err)
	t.Cleanup(j.Kill)
	require.NoError(t, j.WaitLine(ctx, "READY")) // java-1 is registered

	d, err := discovery.New(p.goc, base, discovery.WithPayload(tlsPayload))
	require.NoError(t, err)
	require.NoError(t, d.Start(ctx))
	defer d.Close(context.Background())
	in := &discovery.Instance{Name: "svc", ID: "go-1", Address: "127.0.0.1", Port: 7000}
	require.NoError(t, tlsPayload.Set(in, tlsDetails{Description: "from-go", Weight: 1}))
	require.NoError(t, d.Register(ctx, in))

	found, err := d.QueryForInstances(ctx, "svc")
	require.NoError(t, err)
	var ids []string
	for _, f := range found {
		ids = append(ids, f.ID)
		if f.ID == "java-1" {
			v, err := tlsPayload.Get(f)
			require.NoError(t, err)
			require.Equal(t, "from-java", v.Description, "the Java instance's payload, read by Go")
		}
	}
	slices.Sort(ids)
	require.Equal(t, []string{"go-1", "java-1"}, ids, "Go's query")

	require.NoError(t, j.Send("QUERY"))
	require.NoError(t, j.WaitLine(ctx, "QUERY go-1,java-1"))
	require.NoError(t, j.WaitLine(ctx, "PAYLOAD go-1 "+interop.CuratorDiscoveryPayloadClass+" from-go"))
	require.NoError(t, j.Send("QUIT"))
	require.NoError(t, j.WaitLine(ctx, "BYE"))
	require.NoError(t, j.Wait())
	found, err = d.QueryForInstances(ctx, "svc")
	require.NoError(t, err)
	require.Len(t, found, 1, "Curator unregistered java-1 on close")
}
