package discovery

// The queries: what is registered under the base path, read as it is now
// (a ServiceCache follows it instead).

import (
	"context"
	"errors"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// QueryForNames returns the names of the services under the base path,
// sorted; none when the base path does not exist (Curator throws
// NoNode there).
func (d *Discovery) QueryForNames(ctx context.Context) ([]string, error) {
	if err := d.usable(ctx); err != nil {
		return nil, err
	}
	names, err := d.children(ctx, d.full)
	if err != nil {
		return nil, d.errf("query for names: %w", err)
	}
	return names, nil
}

func (d *Discovery) children(ctx context.Context, path string) ([]string, error) {
	var names []string
	err := d.e.Retry(ctx, func() error {
		var err error
		names, _, err = d.e.Children(ctx, path)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// QueryForInstances returns the instances of service name, sorted by
// node name; none when the service does not exist. An instance node that
// cannot be read is left out, logged at warn and counted (Unreadable).
func (d *Discovery) QueryForInstances(ctx context.Context, name string) ([]*Instance, error) {
	if err := d.usable(ctx); err != nil {
		return nil, err
	}
	if err := checkName("service name", name); err != nil {
		return nil, d.errf("query for instances: %w", err)
	}
	sp := d.servicePath(name)
	ids, err := d.children(ctx, sp)
	if err != nil {
		return nil, d.errf("query for instances of %s: %w", name, err)
	}
	out := make([]*Instance, 0, len(ids))
	for _, id := range ids {
		inst, err := d.read(ctx, zkpath.JoinPath(sp, id))
		switch {
		case errors.Is(err, recipes.ErrCorrupt):
			continue // logged and counted
		case err != nil:
			return nil, d.errf("query for instances of %s: %w", name, err)
		case inst != nil:
			out = append(out, inst)
		}
	}
	return out, nil
}

// QueryForInstance returns instance id of service name, nil when there is
// none. A node that cannot be read is an error wrapping
// recipes.ErrCorrupt (logged and counted too).
func (d *Discovery) QueryForInstance(ctx context.Context, name, id string) (*Instance, error) {
	if err := d.usable(ctx); err != nil {
		return nil, err
	}
	if err := checkName("service name", name); err != nil {
		return nil, d.errf("query for instance: %w", err)
	}
	if err := checkName("instance id", id); err != nil {
		return nil, d.errf("query for instance: %w", err)
	}
	inst, err := d.read(ctx, zkpath.JoinPath(d.servicePath(name), id))
	if err != nil {
		return nil, d.errf("query for instance %s/%s: %w", name, id, err)
	}
	return inst, nil
}

// read reads one instance node: nil for a missing node.
func (d *Discovery) read(ctx context.Context, path string) (*Instance, error) {
	var data []byte
	err := d.e.Retry(ctx, func() error {
		var err error
		data, _, err = d.e.Get(ctx, path)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return d.decode(d.e.Namespace().Strip(path), data)
}

// decode reads an instance's data; an unreadable one is logged at warn
// and counted.
func (d *Discovery) decode(node string, data []byte) (*Instance, error) {
	inst, err := Decode(data)
	if err == nil && d.typ != nil {
		err = d.typ.read(inst) // WithPayload: its class only, decoded
	}
	if err != nil {
		d.unreadable.Add(1)
		d.log.Warn("zkrecipes: service discovery: skipping an instance that cannot be read",
			"node", node, "err", err, "bytes", len(data))
		return nil, err
	}
	return inst, nil
}

// Unreadable returns how many times an instance node that cannot be read
// was skipped (by this Discovery's queries and its caches).
func (d *Discovery) Unreadable() int64 {
	if !d.made() {
		return 0
	}
	return d.unreadable.Load()
}
