// Package kerberos authenticates a Client's connections with Kerberos
// (SASL GSSAPI), as ZooKeeper's Java client does with a JAAS Client
// section using Krb5LoginModule: it logs a principal in to its KDC with a
// password or a keytab, over the pure-Go github.com/jcmturner/gokrb5/v8,
// and gives recipes.WithSASL the mechanism of each connection. It is a
// package of its own so that a program without Kerberos does not link
// gokrb5.
//
//	mech, err := kerberos.Mechanism(kerberos.Login{
//		Config: "/etc/krb5.conf", User: "bob", Realm: "EXAMPLE.COM",
//		Keytab: "/etc/bob.keytab",
//	})
//	...
//	c, err := recipes.Connect(ctx, servers, recipes.WithSASL(mech))
//
// The session's ACL identity is sasl:bob@EXAMPLE.COM (sasl:bob when the
// servers run with zookeeper.kerberos.removeRealmFromPrincipal=true).
package kerberos

import (
	"fmt"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/zkrecipes/zkrecipes/internal/sasl/gssapi"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Login is a client principal's Kerberos login.
type Login struct {
	Config   string // path of the krb5.conf naming the realm's KDCs
	User     string // the principal's name, without the realm
	Realm    string
	Password string // the principal's password, or
	Keytab   string // the path of a keytab holding the principal's key
	// Service is the first part of the servers' principal
	// (<service>/<host>@<realm>); "" means "zookeeper", the servers'
	// default (zookeeper.sasl.client.username).
	Service string
	// ServiceHost is the host part of the servers' principal; "" means
	// the host of each server as dialled (Java canonicalizes it; give it
	// here when the principals name another host than the addresses).
	ServiceHost string
}

// Mechanism logs the principal in to its KDC now and returns the
// mechanism recipes.WithSASL takes: SASL GSSAPI with mutual
// authentication, one per connection, each getting its service ticket
// from the client's cache or the KDC. A failed login (an unknown
// principal, a wrong password or key, no KDC) is its error.
func Mechanism(l Login) (func(host string) recipes.SASLMechanism, error) {
	cl, err := l.client()
	if err != nil {
		return nil, err
	}
	if err := cl.Login(); err != nil {
		return nil, fmt.Errorf("zkrecipes: kerberos login of %s@%s: %w", l.User, l.Realm, err)
	}
	service := l.Service
	if service == "" {
		service = "zookeeper"
	}
	return func(host string) recipes.SASLMechanism {
		if l.ServiceHost != "" {
			host = l.ServiceHost
		}
		return gssapi.New(cl, service, host)
	}, nil
}

// client makes the gokrb5 client of l.
func (l Login) client() (*client.Client, error) {
	if l.User == "" || l.Realm == "" || (l.Password == "") == (l.Keytab == "") {
		return nil, fmt.Errorf("%w: a kerberos login needs User, Realm and one of Password or Keytab", recipes.ErrInvalidArgument)
	}
	cfg, err := config.Load(l.Config)
	if err != nil {
		return nil, fmt.Errorf("%w: krb5.conf %q: %w", recipes.ErrInvalidArgument, l.Config, err)
	}
	if l.Password != "" {
		return client.NewWithPassword(l.User, l.Realm, l.Password, cfg, client.DisablePAFXFAST(true)), nil
	}
	kt, err := keytab.Load(l.Keytab)
	if err != nil {
		return nil, fmt.Errorf("%w: keytab %q: %w", recipes.ErrInvalidArgument, l.Keytab, err)
	}
	return client.NewWithKeytab(l.User, l.Realm, kt, cfg, client.DisablePAFXFAST(true)), nil
}
