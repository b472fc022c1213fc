// Command metrics demonstrates a Client's metrics, exported to Prometheus
// with package metrics/prommetrics.
//
// It connects to the ZooKeeper ensemble named by ZK_SERVERS
// ("host:port,host:port"), or, when that is unset, starts a local server
// with zktest.Launch and stops it at exit. Then it:
//
//  1. makes a registry of its own, registers the zkrecipes metrics in it
//     (prommetrics.New) and serves that registry on -listen's /metrics
//     (promhttp.HandlerFor);
//  2. connects with recipes.WithMetrics in namespace zkrecipes-demo and
//     runs a lock cycle (Lock, then Unlock) on a mutex;
//  3. scrapes its own /metrics once and prints the zkrecipes series: the
//     requests the cycle made (its first create finds the lock's parent
//     missing: result no_parent, not an error), its wait and hold time,
//     labelled with the namespace and the path, the connection's state
//     changes.
//
// With -serve 1m it keeps serving for a minute afterwards, for a look with
// curl or a Prometheus server. Run it with "go run ./examples/metrics".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/metrics/prommetrics"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	namespace = "zkrecipes-demo"
	lockPath  = "/metrics-lock"
)

var (
	listen = flag.String("listen", "127.0.0.1:0", "address to serve /metrics on")
	serve  = flag.Duration("serve", 0, "keep serving /metrics this long after the lock cycle")
)

func main() {
	flag.Parse()
	demo.Main(time.Minute+*serve, run)
}

func run(ctx context.Context, servers []string) error {
	reg := prometheus.NewRegistry() // the registry the zkrecipes metrics are in, served below
	pm, err := prommetrics.New(reg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/metrics"
	demo.Say("serving %s", url)

	c, err := demo.Connect(servers, 4*time.Second, recipes.WithMetrics(pm), recipes.WithNamespace(namespace))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	m, err := mutex.New(c, lockPath)
	if err != nil {
		return err
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	demo.Say("locked %s (node %s)", lockPath, lease.Node())
	time.Sleep(10 * time.Millisecond) // something to hold for
	if err := lease.Release(ctx); err != nil {
		return err
	}
	demo.Say("unlocked")

	body, err := scrape(ctx, url)
	if err != nil {
		return err
	}
	var shown []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "zkrecipes_") && !strings.HasSuffix(line, " 0") && !strings.Contains(line, "_bucket{") {
			shown = append(shown, line)
			fmt.Println("  " + line)
		}
	}
	lock := `path="` + lockPath + `",recipe="mutex"`
	ns := `zk_namespace="` + namespace + `"`
	want := []string{
		`zkrecipes_recipe_wait_seconds_count{` + lock + `,` + ns + `} 1`,
		`zkrecipes_recipe_hold_seconds_count{` + lock + `,` + ns + `} 1`,
		`zkrecipes_recipe_acquires_total{` + lock + `,result="acquired",` + ns + `} 1`,
		`zkrecipes_requests_total{op="create",result="ok"}`,
		`zkrecipes_requests_total{op="create",result="no_node"} 0`, // a missing parent is no_parent
		`zkrecipes_connection_state_changes_total{state="CONNECTED"} 1`,
	}
	var missing []string
	for _, w := range want {
		if !strings.Contains(body, w) {
			missing = append(missing, w)
		}
	}
	if *serve > 0 {
		demo.Say("serving %s for %v", url, *serve)
		select {
		case <-time.After(*serve):
		case <-ctx.Done():
		}
	}
	return demo.Verdict(len(missing) == 0, "one lock cycle shows in /metrics (%d zkrecipes series not zero; missing: %q)", len(shown), missing)
}

// scrape reads url once.
func scrape(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", errors.New("scrape: " + resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
