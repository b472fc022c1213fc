// Package shared holds Curator's shared values (recipes/shared):
// Value, raw bytes in one persistent node that every process sees,
// and Count, an int on top of it stored as Curator stores it (4
// bytes, big-endian), so that a Go process and a Java one share a count.
//
// Each keeps the current value cached, watched and read again after every
// reconnection; Get reads the cache. The lifecycle is the library's: the
// constructor touches nothing; Start creates the node with the seed when
// it does not exist (its missing parents as containers), reads it and
// starts following it; Close stops following (the node stays).
//
// Listen and Subscribe follow the listener rule of package recipes: the
// current value first (once known: after Start), then every new version,
// in order, on a goroutine of their own. Each value carries the node
// version it was read at, which CompareAndSet takes: of several clients setting
// from the same version, exactly one wins.
//
// The errors named here (ErrNotStarted, ErrAlreadyStarted, ErrClosed,
// ErrInvalidArgument, ...) are package recipes' sentinels, matched with
// errors.Is; messages read "zkrecipes: shared count <path>: ...".
//
// # ACLs
//
// The node and its missing parents get the Client's ACLs
// (recipes.WithACLProvider) when Start creates them; a Start the server
// refuses fails at once with an error wrapping recipes.ErrNoAuth. See
// docs/security.md.
package shared
