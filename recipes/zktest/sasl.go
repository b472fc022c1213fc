package zktest

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// jaasFile is the name of the local cluster's JAAS configuration, in its
// root directory (every member reads the same file).
const jaasFile = "jaas.conf"

// saslConfig is what the SASL options ask of the servers.
type saslConfig struct {
	users    map[string]string // DigestLoginModule users and passwords
	kdc      *KDC              // or Kerberos with this KDC
	required bool              // enforce.auth.enabled with the sasl scheme
}

// on reports whether the servers run with SASL.
func (s saslConfig) on() bool { return s.users != nil || s.kdc != nil }

// WithSASLDigest starts the servers with SASL DIGEST-MD5 authentication
// for users (name to password), as a Java ensemble is secured with a JAAS
// file: a Server section with
// org.apache.zookeeper.server.auth.DigestLoginModule and one
// user_<name>="<password>" option per user, passed to each server with
// -Djava.security.auth.login.config, and the SASL authentication
// provider (authProvider.sasl=...SASLAuthenticationProvider). A session
// authenticated as name has the ACL id sasl:<name>. Unauthenticated
// clients are still served unless WithSASLRequired is given.
//
// User names are letters, digits, '.', '_' and '-' (the JAAS option
// user_<name> must be one word); passwords may be any text without
// control characters. It needs a local installation: Launch fails with
// it for a cluster named by ZK_TEST_SERVERS or started in Docker.
func WithSASLDigest(users map[string]string) Option {
	return func(c *config) error {
		if len(users) == 0 {
			return errors.New("zktest: WithSASLDigest: no users")
		}
		for name, pw := range users {
			if err := checkSASLUser(name, pw); err != nil {
				return err
			}
		}
		c.sasl.users = maps.Clone(users)
		return nil
	}
}

// WithSASLKerberos starts the servers with SASL Kerberos (GSSAPI)
// authentication against kdc (StartKDC): a JAAS Server section with
// com.sun.security.auth.module.Krb5LoginModule logging in as
// kdc.ServicePrincipal() from its keytab, -Djava.security.krb5.conf
// naming kdc.Krb5Conf(), and the SASL authentication provider. A
// client authenticates with a ticket for KDCService/KDCServiceHost; a
// session authenticated as user@REALM has the ACL id sasl:user@REALM. It
// cannot be combined with WithSASLDigest (a ZooKeeper server offers one
// mechanism) and needs a local installation.
func WithSASLKerberos(kdc *KDC) Option {
	return func(c *config) error {
		if kdc == nil {
			return errors.New("zktest: WithSASLKerberos: nil KDC")
		}
		c.sasl.kdc = kdc
		return nil
	}
}

// WithSASLRequired makes the servers refuse every request of a session
// not authenticated with SASL (ZooKeeper 3.7+: enforce.auth.enabled=true,
// enforce.auth.schemes=sasl): such a request is answered with
// SESSIONCLOSEDREQUIRESASLAUTH and the connection is closed, and so is a
// connection whose SASL authentication fails. It needs WithSASLDigest or
// WithSASLKerberos.
func WithSASLRequired() Option {
	return func(c *config) error { c.sasl.required = true; return nil }
}

func checkSASLUser(name, pw string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) >= 0 {
		return fmt.Errorf("zktest: WithSASLDigest: user name %q: use letters, digits, '.', '_' and '-'", name)
	}
	if strings.IndexFunc(pw, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
		return fmt.Errorf("zktest: WithSASLDigest: the password of %q has a control character", name)
	}
	return nil
}

// checkSASL reports options that cannot be honoured: SASL required
// without users, or SASL on servers zktest does not start itself.
func (s saslConfig) check(m mode) error {
	if s.required && !s.on() {
		return errors.New("zktest: WithSASLRequired needs WithSASLDigest or WithSASLKerberos")
	}
	if s.users != nil && s.kdc != nil {
		return errors.New("zktest: WithSASLDigest and WithSASLKerberos together: a server offers one SASL mechanism")
	}
	if s.on() && m != modeLocal {
		return fmt.Errorf("zktest: SASL needs a local ZooKeeper installation (the %s servers cannot be configured): %w", m, ErrUnavailable)
	}
	return nil
}

// jaas returns the JAAS configuration of the servers' Server section.
func (s saslConfig) jaas() string {
	if s.kdc != nil {
		return fmt.Sprintf("Server {\n  com.sun.security.auth.module.Krb5LoginModule required\n"+
			"  useKeyTab=true\n  keyTab=\"%s\"\n  storeKey=true\n  useTicketCache=false\n  principal=\"%s\";\n};\n",
			s.kdc.Keytab(), s.kdc.ServicePrincipal())
	}
	var b strings.Builder
	b.WriteString("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required")
	for _, name := range slices.Sorted(maps.Keys(s.users)) {
		pw := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s.users[name])
		fmt.Fprintf(&b, "\n  user_%s=\"%s\"", name, pw)
	}
	b.WriteString(";\n};\n")
	return b.String()
}

// writeJAAS writes the JAAS file into the cluster's root when SASL is on.
func (lc *localCluster) writeJAAS() error {
	if !lc.cfg.sasl.on() {
		return nil
	}
	return os.WriteFile(filepath.Join(lc.root, jaasFile), []byte(lc.cfg.sasl.jaas()), 0o600)
}

// saslJVMArgs returns the servers' system properties for SASL: the JAAS
// file, the provider, the mechanism's own and, when required, the
// enforcement.
func (lc *localCluster) saslJVMArgs() []string {
	s := lc.cfg.sasl
	if !s.on() {
		return nil
	}
	args := []string{
		"-Djava.security.auth.login.config=" + filepath.Join(lc.root, jaasFile),
		"-Dzookeeper.authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
	}
	if s.kdc != nil {
		// GSSAPI is allowed in 3.9's FIPS mode: its default stays.
		args = append(args, "-Djava.security.krb5.conf="+s.kdc.Krb5Conf())
	} else {
		// ZooKeeper 3.9's FIPS mode, on by default, refuses DIGEST-MD5
		// ("SaslServer will not use DIGEST-MD5 ... FIPS mode is enabled");
		// 3.8 has no such mode and ignores the property.
		args = append(args, "-Dzookeeper.fips-mode=false")
	}
	if s.required {
		args = append(args, "-Dzookeeper.enforce.auth.enabled=true", "-Dzookeeper.enforce.auth.schemes=sasl")
	}
	return args
}
