package zktest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The KDCs StartKDC runs: their realm, and the service principal each
// gets for ZooKeeper servers on 127.0.0.1 (a client asks a ticket for
// KDCService/KDCServiceHost).
const (
	KDCRealm       = "ZK.TEST"
	KDCService     = "zookeeper"
	KDCServiceHost = "localhost"
)

const kdcStartTimeout = 15 * time.Second

// KDC is an MIT Kerberos KDC (Debian's krb5-kdc) run for tests: a
// private database, configuration and keytab in a temporary directory,
// listening on a free loopback port (TCP and UDP), started without root.
// Its realm is KDCRealm; it knows the users given to StartKDC (with
// their passwords) and the service principal
// KDCService/KDCServiceHost, whose keytab WithSASLKerberos gives the
// ZooKeeper servers.
type KDC struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// StartKDC starts a KDC for the test with users (name to password) and
// registers a t.Cleanup that stops it. It fails the test when the MIT
// KDC programs (krb5kdc, kdb5_util, kadmin.local: apt-get install
// krb5-kdc krb5-admin-server) are missing or the KDC does not start.
func StartKDC(t testing.TB, users map[string]string) *KDC {
	t.Helper()
	k, err := LaunchKDC(users)
	if err != nil {
		t.Fatalf("zktest: %v", err)
		return nil
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("zktest: closing the KDC: %v", err)
		}
	})
	return k
}

// LaunchKDC starts a KDC outside of a test, as StartKDC does; the caller
// must call Close.
func LaunchKDC(users map[string]string) (_ *KDC, err error) {
	for name, pw := range users {
		if err := checkSASLUser(name, pw); err != nil {
			return nil, err
		}
	}
	removeStaleDirs()
	dir, err := os.MkdirTemp("", tempPrefix+"kdc-")
	if err != nil {
		return nil, err
	}
	k := &KDC{dir: dir, done: make(chan struct{})}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("zktest: starting a KDC: %w", err), k.Close())
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	k.port = ports[0]
	if err := k.writeConfig(); err != nil {
		return nil, err
	}
	if err := k.initDatabase(users); err != nil {
		return nil, err
	}
	if err := k.start(); err != nil {
		return nil, err
	}
	return k, nil
}

// Realm returns KDCRealm.
func (k *KDC) Realm() string { return KDCRealm }

// Addr returns the KDC's host:port (TCP and UDP).
func (k *KDC) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(k.port)) }

// Krb5Conf returns the path of a krb5.conf that names the KDC (TCP only),
// for clients (gokrb5's config.Load, KRB5_CONFIG, java.security.krb5.conf).
func (k *KDC) Krb5Conf() string { return filepath.Join(k.dir, "krb5.conf") }

// Keytab returns the path of the service principal's keytab.
func (k *KDC) Keytab() string { return filepath.Join(k.dir, "zookeeper.keytab") }

// ServicePrincipal returns KDCService/KDCServiceHost@KDCRealm.
func (k *KDC) ServicePrincipal() string { return KDCService + "/" + KDCServiceHost + "@" + KDCRealm }

// Close stops the KDC and removes its files.
func (k *KDC) Close() error {
	k.closeOnce.Do(func() {
		var errs []error
		if k.cmd != nil && k.cmd.Process != nil {
			_ = killProc(k.cmd.Process)
			select {
			case <-k.done:
			case <-time.After(exitTimeout):
				errs = append(errs, fmt.Errorf("krb5kdc %d did not exit within %v of SIGKILL", k.cmd.Process.Pid, exitTimeout))
			}
		}
		if err := os.RemoveAll(k.dir); err != nil {
			errs = append(errs, err)
		}
		k.closeErr = errors.Join(errs...)
	})
	return k.closeErr
}

func (k *KDC) writeConfig() error {
	krb5 := fmt.Sprintf("[libdefaults]\n  default_realm = %[1]s\n  dns_lookup_kdc = false\n  dns_lookup_realm = false\n"+
		"  rdns = false\n  udp_preference_limit = 1\n[realms]\n  %[1]s = {\n    kdc = %[2]s\n  }\n", KDCRealm, k.Addr())
	kdc := fmt.Sprintf("[kdcdefaults]\n  kdc_ports = %[2]d\n  kdc_tcp_ports = %[2]d\n[realms]\n  %[1]s = {\n"+
		"    database_name = %[3]s/principal\n    key_stash_file = %[3]s/stash\n    acl_file = %[3]s/kadm5.acl\n"+
		"    max_life = 1h\n  }\n[logging]\n  kdc = FILE:%[3]s/kdc.log\n", KDCRealm, k.port, k.dir)
	for name, text := range map[string]string{"krb5.conf": krb5, "kdc.conf": kdc, "kadm5.acl": ""} {
		if err := os.WriteFile(filepath.Join(k.dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// env is the environment of the MIT programs: this KDC's files only.
func (k *KDC) env() []string {
	return append(os.Environ(), "KRB5_CONFIG="+k.Krb5Conf(), "KRB5_KDC_PROFILE="+filepath.Join(k.dir, "kdc.conf"))
}

// run runs an MIT program to completion.
func (k *KDC) run(prog string, args ...string) error {
	path, err := kdcProgram(prog)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Env, cmd.Dir = k.env(), k.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %w\n%s", prog, args[0], err, out)
	}
	return nil
}

// initDatabase creates the realm's database with the users and the
// service principal, and the service's keytab.
func (k *KDC) initDatabase(users map[string]string) error {
	var master [16]byte
	if _, err := rand.Read(master[:]); err != nil {
		return err
	}
	if err := k.run("kdb5_util", "create", "-s", "-r", KDCRealm, "-P", hex.EncodeToString(master[:])); err != nil {
		return err
	}
	for name, pw := range users {
		if err := k.run("kadmin.local", "addprinc", "-pw", pw, name); err != nil {
			return err
		}
	}
	spn := KDCService + "/" + KDCServiceHost
	if err := k.run("kadmin.local", "addprinc", "-randkey", spn); err != nil {
		return err
	}
	return k.run("kadmin.local", "ktadd", "-k", k.Keytab(), spn)
}

// start starts krb5kdc in the foreground and waits until its log says it
// serves.
func (k *KDC) start() error {
	path, err := kdcProgram("krb5kdc")
	if err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(k.dir, "krb5kdc.out"))
	if err != nil {
		return err
	}
	k.cmd = exec.Command(path, "-n", "-P", filepath.Join(k.dir, "krb5kdc.pid"))
	k.cmd.Env, k.cmd.Dir, k.cmd.Stdout, k.cmd.Stderr = k.env(), k.dir, out, out
	k.cmd.SysProcAttr = sysProcAttr()
	if err := k.cmd.Start(); err != nil {
		out.Close()
		return err
	}
	go func() { _ = k.cmd.Wait(); out.Close(); close(k.done) }()
	deadline := time.Now().Add(kdcStartTimeout)
	for {
		log, _ := os.ReadFile(filepath.Join(k.dir, "kdc.log"))
		if bytes.Contains(log, []byte("commencing operation")) {
			return nil
		}
		select {
		case <-k.done:
			o, _ := os.ReadFile(filepath.Join(k.dir, "krb5kdc.out"))
			return fmt.Errorf("krb5kdc exited: %s%s", tail(log, 20), o)
		case <-time.After(pollInterval):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("krb5kdc not serving after %v: %s", kdcStartTimeout, tail(log, 20))
		}
	}
}

// kdcProgram finds an MIT KDC program on PATH or in /usr/sbin (root's
// PATH has it, a user's may not).
func kdcProgram(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found (apt-get install krb5-kdc krb5-admin-server): %w", name, ErrUnavailable)
	}
	return p, nil
}
