// Command zkserve runs a local ZooKeeper for development, outside tests,
// until interrupted: a standalone server, or an ensemble with -members 3,
// found as package zktest finds one (ZOOKEEPER_HOME, Debian's package, or
// Docker with zktest/zkdocker; ZK_TEST_VERSION=3.9 for 3.9). It prints
// the connect string, as a ZK_SERVERS line a shell can eval, and removes
// the servers and their data on Ctrl-C (SIGINT or SIGTERM). With -tls
// the servers accept clients over TLS only, with client certificates
// (zktest.WithTLS), and it prints the -tls flags zkinspect and zkrun need.
//
//	go run github.com/zkrecipes/zkrecipes/recipes/zktest/zkserve -members 3
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func main() {
	members := flag.Int("members", 1, "how many members: 1 for a standalone server, 3 or more for an ensemble")
	tick := flag.Duration("tick", zktest.DefaultTickTime, "the servers' tickTime (sessions last 2 to 20 ticks)")
	secure := flag.Bool("tls", false, "TLS only, with client certificates (ssl.clientAuth=need)")
	flag.Parse()
	if *members < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	opts := []zktest.Option{zktest.WithTickTime(*tick), zktest.WithoutTLS()}
	if *secure {
		opts[1] = zktest.WithTLS()
	}
	c, err := zktest.Launch(*members, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkserve:", err)
		os.Exit(1)
	}
	fmt.Printf("ZK_SERVERS=%s\n", c.ConnectString())
	if ca, cert, key := c.TLSFiles(); ca != "" {
		fmt.Fprintf(os.Stderr, "zkserve: TLS only: zkinspect -tls-ca %s -tls-cert %s -tls-key %s ...\n", ca, cert, key)
	}
	fmt.Fprintf(os.Stderr, "zkserve: ZooKeeper %s, %d member(s); Ctrl-C stops it\n", c.Version(), c.Len())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("the servers did not stop within 30s")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkserve:", err)
		os.Exit(1)
	}
}
