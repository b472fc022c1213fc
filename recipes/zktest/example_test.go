package zktest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// quiet drops go-zookeeper's log lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// A test starts a server with Start, which stops it when the test ends, and
// connects a client to its addresses.
func ExampleStart() {
	testCreate := func(t *testing.T) {
		zkc := zktest.Start(t)
		conn, _, err := zk.Connect(zkc.Servers(), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Create("/example", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	_ = testCreate // func TestCreate(t *testing.T) { ... }
}

// Outside of a test, Launch starts the server and Close stops it.
func ExampleLaunch() {
	zkc, err := zktest.Launch(1, zktest.WithoutTLS()) // plain, even under ZK_TEST_TLS
	if err != nil {
		fmt.Println(err)
		return
	}
	defer zkc.Close()

	conn, events, err := zk.Connect(zkc.Servers(), 2*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		conn.Close()
		for range events { // wait until the client has stopped
		}
	}()
	if _, err := conn.Create("/example", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		fmt.Println(err)
		return
	}
	data, _, err := conn.Get("/example")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n", data)
	if err := conn.Delete("/example", -1); err != nil {
		fmt.Println(err)
	}
	// Output: hello
}
