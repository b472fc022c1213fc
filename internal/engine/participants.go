package engine

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Member is one node of a recipe's queue as ReadQueue reports it.
type Member struct {
	contend.Contender
	Node  string // its path inside the client's namespace
	Data  []byte // its data
	Holds bool   // the driver's rule lets it hold, given the nodes ahead of it
}

// ReadQueue lists the children of dir (a server path) that keep accepts
// (nil: all), in the driver's order, reads each one's data, and tells
// which hold by the driver's rule (Decide on the nodes ahead). Nodes that
// vanish while they are read are left out; a missing dir is an empty
// queue. Connection errors are retried under the client's policy. Every
// recipe's Participants is this one read.
func (c *Client) ReadQueue(ctx context.Context, dir string, d *contend.Driver, keep func(contend.Contender) bool) ([]Member, error) {
	var kids []string
	err := c.Retry(ctx, func() error {
		var err error
		kids, _, err = c.Children(ctx, dir)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sorted := contend.SortContenders(kids, d)
	out := make([]Member, 0, len(sorted))
	for _, k := range sorted {
		if keep != nil && !keep(k) {
			continue
		}
		p := zkpath.JoinPath(dir, k.Name)
		var data []byte
		err := c.Retry(ctx, func() error {
			var err error
			data, _, err = c.Get(ctx, p)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Member{Contender: k, Node: c.Namespace().Strip(p), Data: data})
	}
	below := make([]contend.Contender, 0, len(out))
	for i := range out {
		out[i].Holds = d.Decide(below).Held
		below = append(below, out[i].Contender)
	}
	return out, nil
}
