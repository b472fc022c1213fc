//go:build chaos

package chaos

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The part of the seed-5 run's counter history (ZooKeeper 3.9.6) that
// porcupine rejected, its log lines as recorded (testdata/counter-seed5):
// counter-2's Get (op 992) read 1373 though counter-1's increment from
// 1373 to 1374 (op 1031) had returned 1.7 ms before the Get was called.
// The Get had synced first, on the leader, where a sync orders nothing
// (atomicval's TestReadsNeedAQuorum; Get now reads after a barrier).
// Without that Get the run's whole history, the final read of 3131
// included, is linearizable. The checker is right to reject it: the
// fragment is Illegal from the value before it (1372), and Ok without
// the Get.
func TestCounterSeed5StaleGet(t *testing.T) {
	evs, err := readLogs("testdata/counter-seed5")
	if err != nil {
		t.Fatal(err)
	}
	ops, _, bad := counterHistory(evs[roleCounter])
	if len(bad) > 0 || len(ops) != 5 {
		t.Fatalf("%d operations, %v", len(ops), bad)
	}
	from := counterModel
	from.Init = func() []any { return []any{int64(1372)} }
	if got := porcupine.CheckOperationsTimeout(from.ToModel(), ops, 10*time.Second); got != porcupine.Illegal {
		t.Errorf("the recorded fragment: %s, want Illegal", got)
	}
	var rest []porcupine.Operation
	for _, op := range ops {
		if op.Input.(cIn).Kind != cGet {
			rest = append(rest, op)
		}
	}
	if got := porcupine.CheckOperationsTimeout(from.ToModel(), rest, 10*time.Second); got != porcupine.Ok {
		t.Errorf("the fragment without the stale Get: %s, want Ok", got)
	}
}
