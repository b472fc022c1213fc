// Command discovery demonstrates package discovery (Curator's
// curator-x-discovery, wire-compatible): a Go service and a Java service
// register on one base path and find each other.
//
// The Go service "orders" registers instance go-1 with a typed payload: a
// discovery.Payload declares the Go type and its Java class once, and
// writes it as Curator does ("@class" inside it). When Curator's curator-x-discovery,
// Java and its jars are installed (scripts/install-deps.sh), a Java
// process registers java-1 through Curator's own ServiceDiscovery, typed
// on that payload class; otherwise a second Go instance stands in for it
// (-go-only forces that). A Go client finds both through a Provider (round
// robin) and reads java-1's payload as the Go type; the Java side queries
// and reads go-1's payload as its own class.
// The Go service's link is then cut (its session survives): the
// provider's cache sees no removal and no re-registration. Finally the
// Java service closes (Curator unregisters it) and Go unregisters go-1.
//
// The verdict checks that each side found the other, that the typed
// payload crossed over, that the cut caused no churn, and that nothing is
// left.
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper,
// and ends with a verdict line. Run it with "go run ./examples/discovery".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

const base = "/zkrecipes-examples/discovery"

var goOnly = flag.Bool("go-only", false, "a second Go instance instead of the Java service, even when Curator is installed")

func main() {
	flag.Parse()
	demo.Main(2*time.Minute, run)
}

// details is the payload, CuratorDiscovery.java's Details.
type details struct {
	Description string            `json:"description"`
	Weight      int               `json:"weight"`
	Meta        map[string]string `json:"meta"`
}

// detailsPayload declares the payload once: the Go type and the Java
// class it maps to, the class the Java service's discovery is typed on.
var detailsPayload = discovery.Payload[details]{Class: interop.CuratorDiscoveryPayloadClass}

func instance(id string, port int) (*discovery.Instance, error) {
	in := &discovery.Instance{Name: "orders", ID: id, Address: "127.0.0.1", Port: port,
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}")}
	return in, detailsPayload.Set(in, details{Description: "go " + id, Weight: 1, Meta: map[string]string{"lang": "go"}})
}

func ids(l []*discovery.Instance) string {
	s := make([]string, len(l))
	for i, in := range l {
		s[i] = in.ID
	}
	return strings.Join(s, ",")
}

func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		if err := demo.Pause(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

func run(ctx context.Context, servers []string) error {
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	defer demo.DeleteTree(admin, base)
	services := base + "/services"

	// The Go service, through a proxy so its link can be cut.
	proxy, err := zktest.ListenProxy(servers[0])
	if err != nil {
		return err
	}
	defer proxy.Close()
	svc, err := demo.Connect([]string{proxy.Addr()}, 4*time.Second)
	if err != nil {
		return err
	}
	defer svc.Close(context.Background())
	d, err := discovery.New(svc, services, discovery.WithPayload(detailsPayload))
	if err != nil {
		return err
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	defer d.Close(context.Background())
	goInst, err := instance("go-1", 8080)
	if err != nil {
		return err
	}
	if err := d.Register(ctx, goInst); err != nil {
		return err
	}
	demo.Say("go service: registered orders/go-1 at %s", goInst.BuildURI(nil))

	// The Java service (or a second Go one).
	var java *interop.Proc
	peer := "java-1"
	if !*goOnly {
		dir, err := os.MkdirTemp("", "zkrecipes-discovery-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		java, err = interop.StartCuratorDiscovery(ctx, dir, strings.Join(servers, ","), services, "orders", "java-1", "9090", "java java-1", "4000")
		switch {
		case errors.Is(err, interop.ErrUnavailable):
			demo.Say("no Curator here (%v): a second Go instance stands in for the Java service", err)
		case err != nil:
			return err
		default:
			defer java.Kill()
			if err := java.WaitLine(ctx, "READY"); err != nil {
				return err
			}
			demo.Say("java service: registered orders/java-1 through Curator's ServiceDiscovery")
		}
	}
	if java == nil {
		peer = "go-2"
		in, err := instance("go-2", 8081)
		if err != nil {
			return err
		}
		if err := d.Register(ctx, in); err != nil {
			return err
		}
	}
	want := "go-1," + peer
	if java != nil {
		want = "go-1,java-1"
	}

	// A Go client finds both.
	cc, err := demo.Connect(servers, 4*time.Second)
	if err != nil {
		return err
	}
	defer cc.Close(context.Background())
	client, err := discovery.New(cc, services, discovery.WithPayload(detailsPayload))
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer client.Close(context.Background())
	prov, err := client.NewProvider("orders")
	if err != nil {
		return err
	}
	if err := prov.Start(ctx); err != nil {
		return err
	}
	defer prov.Close(context.Background())
	if err := waitFor(ctx, func() bool { return ids(prov.Instances()) == want }); err != nil {
		return fmt.Errorf("the Go client never saw %s (saw %s): %w", want, ids(prov.Instances()), err)
	}
	picked := map[string]bool{}
	for range 4 {
		in := prov.Instance()
		picked[in.ID] = true
		demo.Say("go client: round robin picks %s at %s", in.ID, in.BuildURI(nil))
	}
	foundBoth := len(picked) == 2
	javaRead, goRead := true, true
	if java != nil {
		jin, err := client.QueryForInstance(ctx, "orders", "java-1")
		if err != nil || jin == nil {
			return fmt.Errorf("java-1: %v", err)
		}
		p, err := detailsPayload.Get(jin)
		if err != nil {
			return err
		}
		goRead = jin.PayloadClass() == interop.CuratorDiscoveryPayloadClass && p.Description == "java java-1"
		demo.Say("go client: java-1's payload is a %s: %+v", jin.PayloadClass(), p)
		javaRead = false
		wantLine := "PAYLOAD go-1 " + interop.CuratorDiscoveryPayloadClass + " go go-1"
		for i := 0; i < 20 && !javaRead; i++ {
			if err := java.Send("QUERY"); err != nil {
				return err
			}
			wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			javaRead = java.WaitLine(wctx, wantLine) == nil
			cancel()
		}
		demo.Say("java service: queryForInstances reads go-1's payload as %s: %v", interop.CuratorDiscoveryPayloadClass, javaRead)
	}

	// Cut the Go service's link: its session survives, nothing churns.
	var (
		mu    sync.Mutex
		views []string
	)
	remove := prov.Cache().Listen(func(l []*discovery.Instance) {
		mu.Lock()
		views = append(views, ids(l))
		mu.Unlock()
	})
	reconnected := make(chan struct{}, 1)
	stop := svc.Listen(func(s recipes.State) {
		if s == recipes.StateReconnected {
			select {
			case reconnected <- struct{}{}:
			default:
			}
		}
	})
	proxy.Cut()
	demo.Say("go service: link cut")
	select {
	case <-reconnected:
	case <-ctx.Done():
		return ctx.Err()
	}
	stop()
	goInst.Port = 8082
	if err := d.Update(ctx, goInst); err != nil {
		return err
	}
	demo.Say("go service: reconnected in the same session; updated go-1 to port 8082")
	if err := waitFor(ctx, func() bool {
		for _, in := range prov.Instances() {
			if in.ID == "go-1" && in.Port == 8082 {
				return true
			}
		}
		return false
	}); err != nil {
		return err
	}
	remove()
	mu.Lock()
	churn := 0
	for _, v := range views {
		if v != want {
			churn++
		}
	}
	demo.Say("go client: %d views across the cut, %d without every instance", len(views), churn)
	mu.Unlock()

	// Leave: the Java service closes, go-1 and go-2 are unregistered.
	if java != nil {
		if err := java.Send("QUIT"); err != nil {
			return err
		}
		if err := java.WaitLine(ctx, "BYE"); err != nil {
			return err
		}
	} else if err := d.Unregister(ctx, "orders", "go-2"); err != nil {
		return err
	}
	if err := d.Unregister(ctx, "orders", "go-1"); err != nil {
		return err
	}
	if err := waitFor(ctx, func() bool { return len(prov.Instances()) == 0 }); err != nil {
		return err
	}
	left, err := client.QueryForInstances(ctx, "orders")
	if err != nil {
		return err
	}
	crossed := fmt.Sprintf("typed payload read by Java: %v, by Go: %v", javaRead, goRead)
	side := "Java"
	if java == nil {
		side, crossed = "second Go", "no Java side"
	}
	return demo.Verdict(foundBoth && javaRead && goRead && churn == 0 && len(left) == 0 && client.Unreadable() == 0,
		"the Go and the %s service found each other (round robin over both: %v, %s), no churn across the cut (%d bad views), nothing left (%d)",
		side, foundBoth, crossed, churn, len(left))
}
