package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAudit checks that the audit behind the verdict passes a ledger
// written one holder after another and catches what overlapping or stale
// holders would leave: a lost update, a token out of order, money made.
func TestAudit(t *testing.T) {
	clean := func() ledger {
		l := newLedger()
		for i := range 50 {
			l.transfer("worker-1", int64(10+i))
		}
		// Through JSON, as the workers write it.
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		l, err = parseLedger(data)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if p := clean().audit(); len(p) != 0 || clean().sum() != total {
		t.Fatalf("a clean ledger: sum %d, problems %q", clean().sum(), p)
	}

	// Two holders at once: both read the same ledger, both write; the
	// second write drops the first's transfer but logs its own. The sum
	// is still intact (each write moves money within one state), so only
	// the replay can tell.
	l := clean()
	a, b := l, ledger{Accounts: map[string]int{}, Log: append([]entry(nil), l.Log...)}
	for k, v := range l.Accounts {
		b.Accounts[k] = v
	}
	a.transfer("worker-1", 100)
	b.transfer("worker-2", 101)
	b.Log = append(b.Log[:len(b.Log)-1], a.Log[len(a.Log)-1], b.Log[len(b.Log)-1])
	if b.sum() != total {
		t.Fatalf("lost update: sum %d, want %d", b.sum(), total)
	}
	if p := strings.Join(b.audit(), "; "); !strings.Contains(p, "an update was lost") {
		t.Errorf("lost update not caught: %q", p)
	}

	// A stale holder's write after a newer one: tokens out of order.
	l = clean()
	l.transfer("worker-3", 5)
	if p := strings.Join(l.audit(), "; "); !strings.Contains(p, "does not follow token") {
		t.Errorf("token out of order not caught: %q", p)
	}

	// Money made.
	l = clean()
	l.Accounts["A"] += 7
	if p := strings.Join(l.audit(), "; "); !strings.Contains(p, "the accounts hold 1007, not 1000") {
		t.Errorf("broken sum not caught: %q", p)
	}
}
