package recipes

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
)

// The documented default is the engine's, and options only gather engine
// options: the engine checks them when the Client is made.
func TestOptionsGatherEngineOptions(t *testing.T) {
	if DefaultSessionTimeout != engine.DefaultSessionTimeout {
		t.Fatalf("DefaultSessionTimeout %v, the engine's %v", DefaultSessionTimeout, engine.DefaultSessionTimeout)
	}
	got := engineOptions([]Option{WithSessionTimeout(time.Second), nil, WithNamespace("ns")})
	if len(got) != 3 || got[1] != nil {
		t.Fatalf("%d engine options, want 3 with the nil one in its place (the engine refuses it)", len(got))
	}
	var cfg engine.Config
	for _, o := range []engine.Option{got[0], got[2]} {
		if err := o(&cfg); err != nil {
			t.Fatal(err)
		}
	}
}
