package queue

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// After a finish's lost reply, a marker found gone proves the finish
// applied only in the lock's own session; a look answered in a new
// session (the old one expired, the marker with it) means the lock is
// lost, whatever the marker says.
func TestAfterLostReply(t *testing.T) {
	const mine, other = 0x100, 0x200
	assert.Equal(t, finishApplied, afterLostReply(false, mine, mine))
	assert.Equal(t, finishAgain, afterLostReply(true, mine, mine))
	assert.Equal(t, finishLost, afterLostReply(false, other, mine), "gone with the expired session, not deleted by the finish")
	assert.Equal(t, finishLost, afterLostReply(true, other, mine))
}
