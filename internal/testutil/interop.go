package testutil

// The set-up of the Curator interop tests (interop_test.go in rwlock,
// semaphore and election): a missing Curator, Java or ZooKeeper skips the
// test, or fails it when the CI environment variable is true.

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// inCI reports whether the CI environment variable is set to a true
// value: there a missing Curator, Java or ZooKeeper fails a test instead
// of skipping it.
func inCI() bool {
	b, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && b
}

// Unavailable skips the test for a missing dependency (ZooKeeper, Java,
// Curator, Kazoo), or fails it when CI is set: there a broken install step
// must not hide behind a green run.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if inCI() {
		t.Fatalf("CI is set, so a missing dependency is a failure: %v", err)
	}
	t.Skipf("skipping (with CI=true this fails): %v", err)
}

// NeedCurator checks for Curator's jars (and Java) before a ZooKeeper
// server is started for nothing; missing, they skip the test, or fail it
// in CI.
func NeedCurator(t testing.TB) {
	t.Helper()
	if _, err := interop.JavaClasspath(); errors.Is(err, interop.ErrUnavailable) {
		Unavailable(t, err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// CuratorServer checks for Curator's jars and then starts a standalone
// ZooKeeper server, stopped at the end of the test; either missing skips
// the test, or fails it in CI.
func CuratorServer(t testing.TB) *zktest.Cluster {
	t.Helper()
	NeedCurator(t)
	return Server(t)
}

// Server starts a standalone ZooKeeper server with zktest.Launch (so that
// programs can be pointed at it too), stopped at the end of the test; a
// missing ZooKeeper skips the test, or fails it in CI. It is a plain
// server even under ZK_TEST_TLS: the programs pointed at it (Curator in
// Java, Kazoo in Python, the examples' binaries) speak plain ZooKeeper.
func Server(t testing.TB) *zktest.Cluster {
	t.Helper()
	zkc, err := zktest.Launch(1, zktest.WithoutTLS())
	if errors.Is(err, zktest.ErrUnavailable) {
		Unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := zkc.Close(); err != nil {
			t.Errorf("zktest: closing cluster: %v", err)
		}
	})
	return zkc
}

// Curator starts interop's CuratorRecipes.java in mode args[0] (see
// interop.StartCurator); the process is killed at the end of the test.
// A missing Curator or Java skips the test, or fails it in CI.
func Curator(t testing.TB, ctx context.Context, dir string, args ...string) *interop.Proc {
	t.Helper()
	p, err := interop.StartCurator(ctx, dir, args...)
	if errors.Is(err, interop.ErrUnavailable) {
		Unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// Kazoo starts interop's kazoo_recipes.py in mode args[0] (see
// interop.StartKazoo); the process is killed at the end of the test. A
// missing Kazoo skips the test, or fails it in CI.
func Kazoo(t testing.TB, ctx context.Context, dir string, args ...string) *interop.Proc {
	t.Helper()
	if err := interop.KazooAvailable(); errors.Is(err, interop.ErrUnavailable) {
		Unavailable(t, err)
	} else if err != nil {
		t.Fatal(err)
	}
	p, err := interop.StartKazoo(ctx, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}
