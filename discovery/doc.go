// Package discovery is service discovery wire-compatible with Apache
// Curator's curator-x-discovery (and so with Spring Cloud Zookeeper and
// Dubbo, which write the same nodes): Go and Java services register on one
// base path and find each other.
//
// Layout: basePath/<name>/<id>, one node per instance holding its JSON
// (Instance); basePath and basePath/<name> are containers with no data.
// "/services" is the base path Spring Cloud Zookeeper and Dubbo use.
//
// # JSON
//
// Instance.MarshalJSON writes the bytes Curator's JsonInstanceSerializer
// writes (checked against files written by Curator 5.4 and 5.7.1, in
// testdata): Jackson's field order, nulls written, "enabled" only when set,
// "uriSpec" as its parts object, the registration time in epoch
// milliseconds, Jackson's string escapes. A payload is raw JSON; a Java
// service whose ServiceDiscovery is typed on a payload class needs that
// class named inside the object ("@class"), which EncodePayload does;
// strings, numbers and booleans are bare, a list is Jackson's
// ["java.util.ArrayList",[...]]. The reader takes every form those
// writers produce (a template-string uriSpec too) and ignores unknown
// fields.
//
// # Typed payloads
//
// A Java service's ServiceDiscovery is typed on its payload class. The Go
// side declares the same once, a Payload: the Go type and the Java class
// it maps to.
//
//	var details = discovery.Payload[Details]{Class: "com.example.Details"}
//	d, err := discovery.New(c, "/services", discovery.WithPayload(details))
//	err = details.Set(inst, Details{Zone: "eu-1"}) // Curator's bytes
//	v, err := details.Get(provider.Instance())     // a Details
//
// A Discovery made WithPayload reads, in its queries, ServiceCaches and
// Providers, only instances of that class (decoded once, when read) and
// skips the others as unreadable, logged and counted (Unreadable), where
// a Java reader typed on the class fails; it registers only that class.
//
// # Registration
//
// Discovery.Register keeps each instance in existence until Unregister or
// Close, on the engine's owned node (the PersistentNode machinery): made
// again, with its latest Update, when it is gone, and left alone on a
// reconnection that kept the session (Curator re-registers every instance
// on each reconnection: CURATOR-320). An ephemeral node at the instance's
// path that another session owns (a process restarted with the same id
// before its old session expired) is waited for, not deleted: the
// registration completes once the server expires the old session, where
// Curator deletes the other node. ServiceCache and Provider read a service
// through package cache; see docs/discovery.md for the matrix against
// Curator.
//
// Where Curator is not byte-stable the bytes are only equivalent: a Go
// value's nested strings are escaped by encoding/json (U+2028 as \u2028),
// a Java Map's key order is its own.
//
// # ACLs
//
// Instance nodes and their parents (the base path, the service's node) get
// the Client's ACLs (recipes.WithACLProvider). A Register the server
// refuses fails at once with an error wrapping recipes.ErrNoAuth; caches
// leave out the instances they may not read. See docs/security.md.
package discovery
