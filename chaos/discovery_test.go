//go:build chaos

package chaos

// The service-discovery workers (package discovery): memberWorkers
// processes, each registering a DYNAMIC instance of service serviceName
// under servicesPath with its worker name as the id, an address, a port
// and the payload "<name>.<seg>.<n>" (a JSON string), updated every few
// hundred milliseconds. Each keeps a ServiceCache and a Provider of the
// service and logs their views ("mview cache ...", "mview prov ...")
// whenever they change and what the Provider returns every
// memberPickEvery ("mpick <id> <payload>"); the log lines are
// membercheck_test.go's. With -sabotage, discovery-1 does what Curator
// does on every reconnection (CURATOR-320): it unregisters and registers
// its instance again after a connection loss its session survived, which
// the no-churn checks must catch.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const roleDiscovery = "discovery"

func init() {
	registerRole(roleDiscovery, memberWorkers, pacing{0, 0, 300 * time.Millisecond, 900 * time.Millisecond}, (*worker).runDiscovery)
	setupPaths = append(setupPaths, servicesPath)
	roleChecks = append(roleChecks, (*harness).checkDiscoveryRole)
}

func (w *worker) runDiscovery() error {
	d, err := discovery.New(w.c, servicesPath)
	if err != nil {
		return err
	}
	if err := d.Start(w.ctx); err != nil {
		return err
	}
	port := 20000
	if i := strings.LastIndex(w.name, "-"); i >= 0 {
		k, _ := strconv.Atoi(w.name[i+1:])
		port += k
	}
	n := 0
	inst := &discovery.Instance{Name: serviceName, ID: w.name, Address: "127.0.0.1", Port: port, ServiceType: discovery.Dynamic}
	next := func() string {
		p := fmt.Sprintf("%s.%d.%d", w.name, w.seg, n)
		inst.Payload = json.RawMessage(strconv.Quote(p))
		return p
	}

	// The caches first: they see this worker's own registration too.
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
	sc, err := d.NewServiceCache(serviceName)
	if err == nil {
		err = sc.Start(ctx)
	}
	var prov *discovery.Provider
	if err == nil {
		if prov, err = d.NewProvider(serviceName); err == nil {
			err = prov.Start(ctx)
		}
	}
	cancel()
	if err != nil {
		if w.ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("start the service cache and provider: %w", err)
	}
	view := func(l []*discovery.Instance) map[string]string {
		m := map[string]string{}
		for _, i := range l {
			m[i.ID] = instancePayload(i)
		}
		return m
	}
	stopViews := w.logViews(func() map[string]map[string]string {
		return map[string]map[string]string{"cache": view(sc.Instances()), "prov": view(prov.Instances())}
	}, func() {
		if i := prov.Instance(); i != nil {
			w.log.printf("mpick %s %s", i.ID, instancePayload(i))
		} else {
			w.log.printf("mpick -")
		}
	})

	// Sabotage: a connection loss the session survived triggers a
	// re-registration.
	churn := make(chan struct{}, 1)
	if w.sabotage && w.name == roleDiscovery+"-1" {
		var mu sync.Mutex
		var suspended int64
		remove := w.c.Listen(func(s recipes.State) {
			mu.Lock()
			defer mu.Unlock()
			switch s {
			case recipes.StateSuspended:
				suspended = w.c.SessionID()
			case recipes.StateReconnected:
				if suspended != 0 && w.c.SessionID() == suspended {
					select {
					case churn <- struct{}{}:
					default:
					}
				}
				suspended = 0
			}
		})
		defer remove()
	}

	p := next()
	w.log.printf("mset %s", p)
	err = w.retry(2*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		defer cancel()
		return d.Register(ctx, inst)
	})
	if err == nil {
		w.log.printf("msetok %s", p)
		w.op()
	} else if w.ctx.Err() == nil {
		w.log.printf("mseterr %s %s", p, oneLine(err))
	}
	for w.ctx.Err() == nil {
		select {
		case <-churn:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err1 := d.Unregister(ctx, serviceName, w.name)
			err2 := d.Register(ctx, inst)
			cancel()
			w.log.printf("sabotage re-registered %v %v", err1, err2)
		default:
		}
		w.stallPoint("hold")
		w.sleep(w.p.gapMin, w.p.gapMax)
		if w.ctx.Err() != nil {
			break
		}
		n++
		p := next()
		w.log.printf("mset %s", p)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := d.Update(ctx, inst)
		cancel()
		if err == nil {
			w.log.printf("msetok %s", p)
			w.op()
		} else {
			w.log.printf("mseterr %s %s", p, oneLine(err))
		}
	}
	stopViews()
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return errors.Join(prov.Close(ctx), sc.Close(ctx), d.Close(ctx))
}

func (h *harness) checkDiscoveryRole(rep *report, logs map[string][]event) {
	r := h.checkMemberRole(rep, logs, roleDiscovery, false)
	memberSummary(rep, roleDiscovery, r, true)
}
