//go:build chaos

package chaos

import (
	"testing"
	"time"
)

// A role that had no turn between a fault's heal and a quorum pause that
// began right after is judged from the pause's heal, not the first
// fault's (CI's 3.9 run: a discovery worker, paced at 0.3-0.9 s, was
// "unavailable" 4.2 s after a follower pause healed, 0.26 s before a
// quorum pause of 2.8 s began). A fault on one worker, or an outage that
// began after the role's next operation or past the bound, excuses
// nothing.
func TestOutageAfter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	follower := &fault{n: 16, kind: fFollowerPause, start: at(0), heal: at(2.7)}
	quorum := &fault{n: 17, kind: fQuorumPause, start: at(2.96), heal: at(5.8)}
	holder := &fault{n: 18, kind: fPauseHolder, start: at(3), heal: at(5)}
	late := &fault{n: 19, kind: fRestartAll, start: at(2.7 + unavailBound.Seconds() + 0.1), heal: at(20)}
	faults := []*fault{follower, quorum, holder, late}
	next := at(6.9).UnixNano()
	if g := outageAfter(faults, follower, next); g != quorum {
		t.Fatalf("outageAfter = %v, want the quorum pause", g)
	}
	if g := outageAfter(faults, follower, at(2.9).UnixNano()); g != nil {
		t.Fatalf("the role served before the pause began: got %v", g)
	}
	if g := outageAfter([]*fault{follower, holder}, follower, next); g != nil {
		t.Fatalf("a fault on one worker excuses nothing: got %v", g)
	}
	if g := outageAfter([]*fault{follower, late}, follower, at(30).UnixNano()); g != nil {
		t.Fatalf("an outage past the bound excuses nothing: got %v", g)
	}
	if g := outageAfter([]*fault{follower, quorum}, quorum, next); g != nil {
		t.Fatalf("a fault is not its own excuse, nor one before it: got %v", g)
	}
}
