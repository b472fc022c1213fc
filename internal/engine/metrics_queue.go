package engine

import "github.com/zkrecipes/zkrecipes/internal/metric"

// unreadableKey is one series of MetricQueueUnreadable: a queue as
// measured (its recipe and path, before WithMetricsPathLabel) and whether
// the item was kept.
type unreadableKey struct {
	recipeKey
	kept bool
}

// CountUnreadable counts a queue item of recipe (queue, id_queue,
// priority_queue, delay_queue) at path (as the program gave it) whose data
// did not decode: kept in the queue, or handed to the user. The series is
// made on first use; nothing is counted without metrics.
func (c *Client) CountUnreadable(recipe, path string, kept bool) {
	if c != nil {
		c.met.countUnreadable(recipe, path, kept)
	}
}

func (in *instruments) countUnreadable(recipe, path string, kept bool) {
	if in == nil {
		return
	}
	k := unreadableKey{recipeKey{recipe, path}, kept}
	in.mu.Lock()
	defer in.mu.Unlock()
	ctr := in.unreadable[k]
	if ctr == nil {
		label := path
		if in.pathLabel != nil {
			label = in.pathLabel(recipe, path)
		}
		result := "handed"
		if kept {
			result = "kept"
		}
		ctr = in.m.Counter(metric.QueueUnreadable, recipe, in.namespace, label, result)
		in.unreadable[k] = ctr
	}
	ctr.Add(1)
}
