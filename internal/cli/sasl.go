package cli

import (
	"flag"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/kerberos"
)

// The environment variables of the SASL flags: the password is never a
// flag (it would show in ps); the Kerberos ones are MIT's own.
const (
	EnvSASLPassword = "ZK_SASL_PASSWORD"
	EnvKrb5Config   = "KRB5_CONFIG"
	EnvKrb5Keytab   = "KRB5_CLIENT_KTNAME"
)

// SASL is the operator's SASL settings: -sasl digest (DIGEST-MD5, a JAAS
// DigestLoginModule user) or -sasl kerberos (GSSAPI).
type SASL struct {
	Mechanism   string // -sasl: "", digest or kerberos
	User        string // -sasl-user
	Realm       string // -kerberos-realm
	Krb5Config  string // -krb5-config, default $KRB5_CONFIG, then /etc/krb5.conf
	Keytab      string // -kerberos-keytab, default $KRB5_CLIENT_KTNAME
	ServiceHost string // -kerberos-service-host
	password    string // $ZK_SASL_PASSWORD
}

func (s *SASL) register(fs *flag.FlagSet) {
	fs.StringVar(&s.Mechanism, "sasl", "", "authenticate every connection with SASL `mechanism`: digest (DIGEST-MD5) or kerberos (GSSAPI); the password comes from $"+EnvSASLPassword)
	fs.StringVar(&s.User, "sasl-user", "", "the SASL `user` (kerberos: the principal's name, without the realm)")
	fs.StringVar(&s.Realm, "kerberos-realm", "", "the principal's Kerberos `realm`")
	fs.StringVar(&s.Krb5Config, "krb5-config", "", "the `krb5.conf` (default $"+EnvKrb5Config+", then /etc/krb5.conf)")
	fs.StringVar(&s.Keytab, "kerberos-keytab", "", "the principal's `keytab` (default $"+EnvKrb5Keytab+"; else the password)")
	fs.StringVar(&s.ServiceHost, "kerberos-service-host", "", "the `host` of the servers' principal zookeeper/<host> (default: each server's host as dialled)")
}

// resolve checks the SASL flags and reads the environment.
func (s *SASL) resolve(getenv func(string) string) error {
	s.password = getenv(EnvSASLPassword)
	switch s.Mechanism {
	case "":
		return nil
	case "digest":
		if s.User == "" {
			return fmt.Errorf("%w: -sasl digest needs -sasl-user (and $%s)", ErrUsage, EnvSASLPassword)
		}
		return nil
	case "kerberos":
		if s.Krb5Config == "" {
			s.Krb5Config = getenv(EnvKrb5Config)
		}
		if s.Krb5Config == "" {
			s.Krb5Config = "/etc/krb5.conf"
		}
		if s.Keytab == "" && s.password == "" {
			s.Keytab = getenv(EnvKrb5Keytab)
		}
		if s.User == "" || s.Realm == "" || (s.Keytab == "" && s.password == "") {
			return fmt.Errorf("%w: -sasl kerberos needs -sasl-user, -kerberos-realm and a keytab (-kerberos-keytab, $%s) or $%s", ErrUsage, EnvKrb5Keytab, EnvSASLPassword)
		}
		return nil
	}
	return fmt.Errorf("%w: -sasl %q: want digest or kerberos", ErrUsage, s.Mechanism)
}

// option returns the Client option of the settings (nil for none); a
// Kerberos login happens here.
func (s *SASL) option() (recipes.Option, error) {
	switch s.Mechanism {
	case "digest":
		return recipes.WithSASLDigest(s.User, s.password), nil
	case "kerberos":
		l := kerberos.Login{Config: s.Krb5Config, User: s.User, Realm: s.Realm, Keytab: s.Keytab, ServiceHost: s.ServiceHost}
		if l.Keytab == "" {
			l.Password = s.password
		}
		mech, err := kerberos.Mechanism(l)
		if err != nil {
			return nil, err
		}
		return recipes.WithSASL(mech), nil
	}
	return nil, nil
}
