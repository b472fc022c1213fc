package engine

import (
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Creates a server refuses for its version. ZooKeeper before 3.5.3 knows
// neither container nor TTL nodes: it answers createContainer and
// createTTL UNIMPLEMENTED (-6), which go-zookeeper reports as "unknown
// error: -6", and then closes the connection (the session lives on and
// go-zookeeper reconnects; seen on 3.4.13). A 3.5.3+ server started
// without extended types answers a TTL create the same way. Both become
// errors that match ErrUnimplemented and name the server the node needs.
// A refused container is remembered for the client's life, and later
// container creates are refused without being sent: the connection the
// client's holds share is not cut again, and a recipe that needs
// containers fails at once (nothing retries it: ErrUnimplemented is not
// retryable).

// refusedCreate maps the error of a create in mode flags.
func (c *Client) refusedCreate(flags int32, err error) error {
	if !isUnimplemented(err) {
		return err
	}
	switch {
	case flags == zk.FlagContainer:
		if !c.noContainers.Swap(true) {
			c.log.Warn("zkrecipes: the server refuses container nodes (ZooKeeper 3.5.3 or later needed, or recipes.WithoutContainers)", "err", err)
		}
		return containersRefused(err)
	case isTTLMode(flags):
		return ttlRefused(err)
	}
	return err
}

// refusesContainers reports whether the server refused a container
// create before (false for a nil client: send says what is wrong then).
func (c *Client) refusesContainers() bool { return c != nil && c.noContainers.Load() }

// containersRefused is the error of a container create the server refused
// (answer, nil when the client remembered an earlier refusal).
func containersRefused(answer error) error {
	const msg = "container nodes need ZooKeeper 3.5.3 or later (recipes.WithoutContainers makes persistent parents instead, as Curator's dontUseContainerParents)"
	if answer == nil {
		return fmt.Errorf("%w: %s", zkerr.ErrUnimplemented, msg)
	}
	return fmt.Errorf("%w: %s; the server answered: %w", zkerr.ErrUnimplemented, msg, answer)
}

// ttlRefused is the error of a TTL create the server refused.
func ttlRefused(answer error) error {
	return fmt.Errorf("%w: TTL nodes need ZooKeeper 3.5.3 or later started with -Dzookeeper.extendedTypesEnabled=true; the server answered: %w",
		zkerr.ErrUnimplemented, answer)
}
