package kerberos_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/kerberos"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A client logged in to a real MIT KDC reaches a server that requires
// SASL: its session is sasl:bob@ZK.TEST (a node only bob may read, a lock
// taken and released); a wrong password, an unknown principal and a bad
// login are errors of Mechanism, before any server is dialled.
func TestKerberos(t *testing.T) {
	kdc := zktest.StartKDC(t, map[string]string{"bob": "b0b-pw"})
	zkc := zktest.Start(t, zktest.WithSASLKerberos(kdc), zktest.WithSASLRequired())
	login := kerberos.Login{Config: kdc.Krb5Conf(), User: "bob", Realm: kdc.Realm(), Password: "b0b-pw",
		ServiceHost: zktest.KDCServiceHost}
	mech, err := kerberos.Mechanism(login)
	require.NoError(t, err)
	bob := "bob@" + kdc.Realm()
	c := testutil.Connect(t, zkc.Servers(), recipes.WithSASL(mech),
		recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL {
			return []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: bob}}
		})))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.Create(ctx, "/bob", []byte("mine"), 0)
	require.NoError(t, err)
	data, _, err := c.Get(ctx, "/bob")
	require.NoError(t, err)
	assert.Equal(t, "mine", string(data))
	m, err := mutex.New(c, "/locks/kerberos")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))

	wrong := login
	wrong.Password = "wrong"
	_, err = kerberos.Mechanism(wrong)
	assert.Error(t, err, "a wrong password")
	unknown := login
	unknown.User = "mallory"
	_, err = kerberos.Mechanism(unknown)
	assert.Error(t, err, "an unknown principal")
	both := login
	both.Keytab = "/nonexistent"
	_, err = kerberos.Mechanism(both)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "a password and a keytab")
}
