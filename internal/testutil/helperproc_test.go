package testutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

var testHelpers = Helpers{Test: "TestHelperProcUnit", RoleEnv: "ZKTU_HELPER"}

// TestHelperProcUnit is the body of the helper processes below.
func TestHelperProcUnit(t *testing.T) {
	testHelpers.Run(map[string]func() error{
		// echo prints READY, then echoes each stdin line until "exit".
		"echo": func() error {
			fmt.Println("READY")
			sc := bufio.NewScanner(os.Stdin)
			for sc.Scan() {
				if sc.Text() == "exit" {
					return nil
				}
				fmt.Println("ECHO " + sc.Text())
			}
			return errors.New("stdin closed")
		},
		"fail": func() error { return errors.New("on purpose") },
		"hang": func() error { time.Sleep(time.Minute); return nil },
	})
}

func TestHelperProc(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("echo", func(t *testing.T) {
		h := testHelpers.Start(t, "echo", "echo")
		if _, err := h.WaitLine(ctx, "READY"); err != nil {
			t.Fatal(err)
		}
		if err := h.Send("hello"); err != nil {
			t.Fatal(err)
		}
		if l, err := h.WaitLine(ctx, "ECHO "); err != nil || l != "ECHO hello" {
			t.Fatalf("WaitLine = %q, %v; want ECHO hello", l, err)
		}
		if err := h.Send("exit"); err != nil {
			t.Fatal(err)
		}
		if err := h.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("fail", func(t *testing.T) {
		h := testHelpers.Start(t, "fail", "fail")
		err := h.Wait(ctx)
		if err == nil || !strings.Contains(err.Error(), "helper fail: ERROR: on purpose") {
			t.Fatalf("Wait = %v; want the exit error with the helper's stderr", err)
		}
	})
	t.Run("unknown role", func(t *testing.T) {
		h := testHelpers.Start(t, "nobody", "nobody")
		if _, err := h.WaitLine(ctx, "READY"); err == nil || !strings.Contains(err.Error(), `unknown ZKTU_HELPER="nobody"`) {
			t.Fatalf("WaitLine = %v; want an exit before READY naming the unknown role", err)
		}
	})
	t.Run("kill", func(t *testing.T) {
		h := testHelpers.Start(t, "hang", "hang")
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if err := h.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait on a hanging helper = %v; want the deadline", err)
		}
		h.Kill()
		select {
		case <-h.Done():
		default:
			t.Fatal("Kill returned before the helper was reaped")
		}
		if h.Err() == nil {
			t.Error("a killed helper exited without an error")
		}
		h.Kill() // again: a no-op
	})
}
