package recipes

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
)

// The documented defaults are the engine's; options fill in the engine's
// configuration in order, and a nil one is refused.
func TestOptionsFillTheConfig(t *testing.T) {
	if d := engine.DefaultConfig().SessionTimeout; d != DefaultSessionTimeout {
		t.Fatalf("DefaultSessionTimeout %v, the engine's %v", DefaultSessionTimeout, d)
	}
	cfg, err := config([]Option{WithSessionTimeout(time.Second), WithNamespace("ns")})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SessionTimeout != time.Second || cfg.Namespace != "/ns" || cfg.ConnectTimeout != 15*time.Second {
		t.Fatalf("config %+v", cfg)
	}
	if _, err := config([]Option{WithSessionTimeout(time.Second), nil}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a nil option: %v, want ErrInvalidArgument", err)
	}
}
