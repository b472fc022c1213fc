package recipes_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestTLSFromFilesRotates: a client certificate read from files is read
// again when the files change, so the next connection presents the new
// one: the server then knows the session's new connection by its new
// subject.
func TestTLSFromFilesRotates(t *testing.T) {
	cl := tlsCluster(t)
	ca, cert, key := cl.TLSFiles()
	dir := t.TempDir()
	certCopy, keyCopy := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	copyFile(t, cert, certCopy)
	copyFile(t, key, keyCopy)
	cfg, err := recipes.TLSFromFiles(ca, certCopy, keyCopy)
	require.NoError(t, err)

	p := zktest.NewProxy(t, cl.Servers()[0])
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: "CN=" + zktest.ClientCommonName}}
	c := testutil.Connect(t, []string{p.Addr()}, recipes.WithTLS(cfg),
		recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL { return acl })))
	ctx := context.Background()
	_, err = c.Create(ctx, "/rotated", nil, 0)
	require.NoError(t, err)
	_, _, err = c.Get(ctx, "/rotated")
	require.NoError(t, err)

	// Rotate to a certificate for another subject, then cut the link.
	bob, err := cl.ClientTLSAs("rotated-bob")
	require.NoError(t, err)
	pk, err := x509.MarshalPKCS8PrivateKey(bob.Certificates[0].PrivateKey)
	require.NoError(t, err)
	writePEM(t, keyCopy, "PRIVATE KEY", pk)
	writePEM(t, certCopy, "CERTIFICATE", bob.Certificates[0].Certificate[0])
	later := time.Now().Add(2 * time.Second) // a new modification time, whatever the file system's granularity
	require.NoError(t, os.Chtimes(certCopy, later, later))
	require.NoError(t, os.Chtimes(keyCopy, later, later))
	p.Cut()
	testutil.Eventually(t, 20*time.Second, "the new connection known by the new certificate", func() bool {
		_, _, err := c.Get(ctx, "/rotated")
		return errors.Is(err, zk.ErrNoAuth)
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o600))
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

func splitHostPort(t *testing.T, addr string) (string, string, error) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return h, p, err
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
