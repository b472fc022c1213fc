// Package zk34 holds the tests that run the library against a real
// ZooKeeper 3.4.13 (Debian 11's, as `scripts/install-deps.sh zk34` unpacks
// it; `make test-34`): a server without container nodes, TTL nodes,
// persistent watches or /zookeeper/config. Every recipe that needs
// containers or TTL nodes must refuse at once with an error that names the
// server it needs; the caches must fall back to one-shot watches and stay
// equal to the server; Connect, and its ensemble tracking, must work.
//
// A 3.4 server answers an operation it does not know (createContainer,
// createTTL, addWatch) with UNIMPLEMENTED and then closes the connection;
// the session lives on and the client reconnects.
package zk34
