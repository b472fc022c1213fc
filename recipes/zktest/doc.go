// Package zktest provides test fixtures that run a real Apache ZooKeeper: a
// standalone server or an N-member ensemble started for a test (like
// Curator's TestingServer and TestingCluster), fault injection on its members
// (kill -9, restart, SIGSTOP/SIGCONT), and a TCP Proxy that injects network
// faults between a client and a server (cut, black-hole, lost reply). Nothing
// is mocked.
//
// # Using it in tests
//
//	func TestSomething(t *testing.T) {
//		zkc := zktest.Start(t) // stopped by t.Cleanup
//		conn, _, err := zk.Connect(zkc.Servers(), time.Second)
//		...
//	}
//
// StartEnsemble(t, 3) starts a three-member quorum; Kill, Stop, Restart, Pause and
// Resume act on one member, and Leader tells which member leads. NewProxy(t,
// zkc.Servers()[0]) puts a Proxy in front of a server; connect the client to
// its Addr. FourLetter, ZnodeCount and WatchCount query a member with
// ZooKeeper's four-letter-word commands, which the servers this package
// starts accept without restriction, so a test can check that a recipe left
// no znode or watch behind. If the test fails, the last lines of each
// member's log are reported with t.Log; WithLogOutput copies the servers'
// output somewhere while they run. Launch is the same without a testing.TB,
// for programs; its Cluster must be closed with Close.
//
// # Where the server comes from
//
// Start, StartEnsemble and Launch look, in this order, for:
//
//  1. ZK_TEST_SERVERS: a comma-separated list of host:port of a running
//     ensemble. It is used as it is: nothing is started or cleaned up (tests
//     should work under paths of their own), the requested size is not
//     checked, and the cluster is not Controllable, so fault-injection tests
//     should skip themselves when Controllable is false.
//  2. A local installation, started as child java processes (java from
//     JAVA_HOME, else PATH): the jars of an unpacked Apache ZooKeeper
//     release in ZOOKEEPER_HOME (lib/*.jar and *.jar, zookeeper-jute first),
//     else those of Debian's zookeeper package in /usr/share/java ("apt-get
//     install zookeeper"; 3.8.0 on Debian 12), or with ZK_TEST_VERSION=3.9
//     the ZooKeeper 3.9 jars that "scripts/install-deps.sh zk39" unpacked
//     from Debian's unstable suite (see below). Each member gets free ports on 127.0.0.1 (a
//     client port, and quorum and election ports in an ensemble), a private
//     temporary data directory and log file (removed by Close), its own
//     process group, and on Linux a parent-death signal, so no server
//     outlives the test binary even when it is killed.
//  3. A Docker engine, when the test binary imports package zkdocker
//     (import _ "github.com/zkrecipes/zkrecipes/recipes/zktest/zkdocker")
//     and testcontainers-go finds an engine: a standalone server from the
//     official image (zookeeper:3.8, or ZK_TEST_IMAGE). Ensembles of more
//     than one member are not offered in this mode, and the server is not
//     Controllable. This package itself imports nothing of Docker, so a
//     module that uses only the first two ways does not get testcontainers'
//     modules (Docker's client, OpenTelemetry) in its go.mod.
//
// Otherwise the test fails (Launch returns an error wrapping ErrUnavailable)
// with a message saying how to get ZooKeeper, zkdocker's import among the
// ways when it is not imported.
//
// # Which version
//
// Launch asks the servers their version ("srvr": "Zookeeper version:
// 3.9.6-2, ..."); Cluster.Version returns it, and Start and StartEnsemble
// log it with t.Logf, so every test's output names the server it ran
// against. The environment chooses it:
//
//   - ZK_TEST_VERSION: "3.8" or "3.9" (or a full release, "3.9.6"). With
//     3.9 the local backend runs the jars that "scripts/install-deps.sh zk39"
//     unpacked from Debian's unstable suite: zookeeper-jute and zookeeper
//     from that tree, in that order (the 3.9 zookeeper jar's manifest names
//     /usr/share/java/zookeeper-jute.jar, which is Debian 12's 3.8.0, and
//     the wrong order dies with NoSuchMethodError StatPersisted.copyFrom),
//     the libraries (netty, slf4j, metrics-core, commons-cli, snappy) from
//     /usr/share/java. Whatever the backend, a server reporting another
//     version fails Launch, and so does a missing 3.9 tree (Start fails the
//     test; it is never a skip). ZOOKEEPER_HOME and ZK_TEST_SERVERS still
//     take precedence over the unpacked tree; the version check applies to
//     them too. Unset: whichever server is found, no check.
//   - ZK_TEST_VERSION=3.4 runs Debian 11's ZooKeeper 3.4.13, as
//     "scripts/install-deps.sh zk34" unpacks it (ZK_DEBIAN_BULLSEYE_DIR,
//     default ${XDG_CACHE_HOME:-$HOME/.cache}/zkrecipes/debian-bullseye):
//     its zookeeper.jar (jute inside), log4j-1.2.jar (QuorumPeerMain
//     registers log4j's JMX beans), slf4j-api and slf4j-simple. A plain
//     standalone server: 3.4 has no TLS and no containers, TTL nodes,
//     persistent watches or dynamic reconfiguration, and the zoo.cfg and
//     system properties of the later versions are ignored. The tests of
//     internal/zk34 (make test-34) run on it.
//   - ZK_DEBIAN_SID_DIR: where install-deps.sh unpacks Debian unstable's
//     packages (ZooKeeper 3.9, Curator 5.7, Kazoo 2.11) and where this
//     package looks for them, under root/usr/share/java; default
//     ${XDG_CACHE_HOME:-$HOME/.cache}/zkrecipes/debian-sid.
//   - ZK_TEST_IMAGE: the container image zkdocker starts (default
//     zookeeper:3.8, or zookeeper:<ZK_TEST_VERSION>).
//
// The interop tests take Curator's class path from CURATOR_CLASSPATH when
// it is set; scripts/zk39-env.sh prints the settings (ZK_TEST_VERSION=3.9
// and a CURATOR_CLASSPATH of the unpacked Curator 5.7.1) that
// "make test-39" uses.
//
// # Server settings
//
// Servers started by this package use a tickTime of 200ms (WithTickTime
// changes it), so the sessions they grant last between 400ms and 4s and
// session-expiry tests take about a second; initLimit=10 and syncLimit=5
// ticks; no limit on connections per client address; every four-letter
// word enabled and the admin server disabled. The JVM gets
// -Dznode.container.checkIntervalMs=1000 (container znodes are removed
// within about a second of becoming empty; LogContains(i, "Using
// checkIntervalMs=1000") confirms it) and -Dzookeeper.extendedTypesEnabled=true
// (TTL znodes). Transaction logs are fsynced as usual (forceSync is left
// on), so behavior matches production. The JVMs are kept small (-Xmx256m,
// serial GC, C1 only) so that a three-member ensemble starts in a few seconds
// on a two-core machine; 256 MiB (not 128) lets one server take a package's
// tests run again with -count, 66,000-child trees included, without its
// collector stalling the sessions.
//
// # Secure servers
//
// WithSASLDigest starts local servers (standalone or ensemble) that
// authenticate clients with SASL DIGEST-MD5, as a Java ensemble is secured:
// a JAAS file whose Server section lists DigestLoginModule users,
// -Djava.security.auth.login.config naming it, the SASL authentication
// provider, and -Dzookeeper.fips-mode=false (3.9's default FIPS mode
// refuses DIGEST-MD5). WithSASLRequired adds enforce.auth.enabled with the
// sasl scheme (ZooKeeper 3.7+): a session that has not authenticated is
// answered SESSIONCLOSEDREQUIRESASLAUTH (-124) at its first request and
// its connection closed. A session authenticated as a user has the ACL id
// sasl:<user>. These options need a local installation.
//
// StartKDC runs an MIT Kerberos KDC (Debian's krb5-kdc and
// krb5-admin-server) in a temporary directory on a free loopback port,
// without root: realm KDCRealm, the users given, and the service
// principal zookeeper/localhost with a keytab. WithSASLKerberos(kdc)
// starts the servers with a Krb5LoginModule JAAS section logging in from
// that keytab and -Djava.security.krb5.conf naming the KDC; clients take
// kdc.Krb5Conf() and ask a ticket for KDCService/KDCServiceHost. A session
// authenticated as bob has the ACL id sasl:bob@ZK.TEST.
//
// WithTLS starts TLS-only servers (a secureClientPort, ssl.clientAuth=need,
// the x509 provider) with a CA and certificates made for the cluster;
// ClientTLS, ClientTLSAs and TLSFiles give what clients present. The
// examples of WithTLS and WithSASLDigest connect with recipes.WithTLS and
// recipes.WithSASLDigest and show the identity the server then gives.
//
// WithReconfig starts an ensemble (of one member, too) that accepts
// dynamic reconfiguration; AddMember starts a new server, Reconfig adds
// and removes members as the super user (SuperAuth), and Config reads
// /zookeeper/config.
//
// WithObservers adds observers, non-voting members that carry read load,
// after the voting members: StartEnsemble(t, 3, WithObservers(1)) gives
// members 0 to 2 voting and member 3 observing. Voters, Observers and
// IsObserver tell them apart; Kill, Stop, Restart, Pause and Resume work
// on an observer as on a voter. Observers work with WithTLS (ZK_TEST_TLS:
// clients reach them over TLS, the quorum links stay plain) and with
// WithReconfig. WithObserverLinks puts what the test gives (a Proxy) on
// an observer's links to the voters, so that SetLatency makes it lag
// behind the ensemble by a known delay while it serves its clients.
package zktest
