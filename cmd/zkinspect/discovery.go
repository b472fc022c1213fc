package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Discovery is a service discovery path (curator-x-discovery's layout,
// package discovery): a base path with its services, or one service.
type Discovery struct {
	// Base is the base path, "" when <path> is one service.
	Base     string    `json:"base,omitempty"`
	Services []Service `json:"services"`
}

// Service is one service and its instances, by node name.
type Service struct {
	Name      string     `json:"name"`
	Path      string     `json:"path"`
	Instances []Instance `json:"instances"`
}

// Instance is one registered instance; Error says why its node could not
// be read as one (the other fields are then empty).
type Instance struct {
	Node                string    `json:"node"`
	ID                  string    `json:"id"`
	Address             string    `json:"address"`
	Port                int       `json:"port,omitempty"`
	SSLPort             int       `json:"ssl_port,omitempty"`
	Type                string    `json:"service_type"`
	Enabled             bool      `json:"enabled"`
	RegistrationTimeUTC int64     `json:"registration_time_utc"`
	URI                 string    `json:"uri,omitempty"`
	PayloadClass        string    `json:"payload_class,omitempty"`
	Session             string    `json:"session"` // "" for a persistent node
	Ctime               time.Time `json:"ctime"`
	AgeMS               int64     `json:"age_ms"`
	Error               string    `json:"error,omitempty"`

	age time.Duration
}

// serviceOf reads p as one service: leaf children, at least one of them
// an instance of the service p names. It returns nil when p is not one.
func serviceOf(r *reader, p *probe) *Service {
	_, name := engine.SplitPath(p.path)
	if len(p.kids) == 0 {
		return nil
	}
	svc := &Service{Name: name, Path: p.path, Instances: []Instance{}}
	found := false
	for _, k := range p.kids {
		if k.st == nil || k.st.NumChildren > 0 {
			return nil
		}
		in := Instance{Node: k.name, Ctime: time.UnixMilli(k.st.Ctime)}
		if k.st.EphemeralOwner != 0 {
			in.Session = fmt.Sprintf("0x%016x", k.st.EphemeralOwner)
		}
		in.age = r.now.Sub(in.Ctime)
		in.AgeMS = in.age.Milliseconds()
		inst, err := discovery.Decode(k.data)
		switch {
		case err != nil:
			in.Error = err.Error()
		case inst.Name != name:
			in.Error = fmt.Sprintf("an instance of service %q, not of %q", inst.Name, name)
		default:
			found = true
			in.ID, in.Address, in.Port, in.SSLPort = inst.ID, inst.Address, inst.Port, inst.SSLPort
			in.Type, in.Enabled, in.RegistrationTimeUTC = string(inst.ServiceType), inst.IsEnabled(), inst.RegistrationTimeUTC
			in.URI, in.PayloadClass = inst.BuildURI(nil), inst.PayloadClass()
		}
		svc.Instances = append(svc.Instances, in)
	}
	if !found {
		return nil
	}
	return svc
}

// readDiscovery reads p as a discovery path: one service, or a base path
// whose children are services (an empty one too) with at least one
// instance among them. It returns nil when p is neither.
func readDiscovery(ctx context.Context, r *reader, p *probe) (*Discovery, error) {
	if svc := serviceOf(r, p); svc != nil {
		return &Discovery{Services: []Service{*svc}}, nil
	}
	if len(p.kids) == 0 {
		return nil, nil
	}
	for _, k := range p.kids {
		if k.st == nil || k.ephemeral() || len(k.data) > 0 {
			return nil, nil
		}
	}
	d := &Discovery{Base: p.path, Services: []Service{}}
	found := false
	for _, k := range p.kids {
		sp, err := probeNode(ctx, r, k.path)
		switch {
		case errors.Is(err, recipes.ErrNoNode):
			continue
		case errors.Is(err, zk.ErrNoAuth):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("%s: %w", k.path, err)
		}
		if len(sp.kids) == 0 {
			d.Services = append(d.Services, Service{Name: k.name, Path: k.path, Instances: []Instance{}})
			continue
		}
		svc := serviceOf(r, sp)
		if svc == nil {
			return nil, nil
		}
		found = true
		d.Services = append(d.Services, *svc)
	}
	if !found {
		return nil, nil
	}
	return d, nil
}

func renderDiscovery(b *strings.Builder, d *Discovery) {
	n := 0
	for _, s := range d.Services {
		n += len(s.Instances)
	}
	if d.Base != "" {
		fmt.Fprintf(b, "%s: service discovery base path (curator-x-discovery), %d services, %d instances\n", d.Base, len(d.Services), n)
	}
	for _, s := range d.Services {
		fmt.Fprintf(b, "service %s (%s): %d instances\n", s.Name, s.Path, len(s.Instances))
		if len(s.Instances) == 0 {
			fmt.Fprintf(b, "  (no instances)\n")
			continue
		}
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  NODE\tADDRESS\tPORT\tTYPE\t%6s\tSESSION\tURI\tPAYLOAD\n", "AGE")
		for _, in := range s.Instances {
			session := in.Session
			if session == "" {
				session = "persistent"
			}
			if in.Error != "" {
				fmt.Fprintf(tw, "  %s\t?\t?\t?\t%6s\t%s\tunreadable: %s\t\n", in.Node, formatAge(in.age), session, in.Error)
				continue
			}
			port := "-"
			if in.Port != 0 {
				port = fmt.Sprint(in.Port)
			}
			if in.SSLPort != 0 {
				port += fmt.Sprintf(" (ssl %d)", in.SSLPort)
			}
			typ := in.Type
			if !in.Enabled {
				typ += " (disabled)"
			}
			addr := in.Address
			if addr == "" {
				addr = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%6s\t%s\t%s\t%s\n", in.Node, addr, port, typ, formatAge(in.age), session, in.URI, in.PayloadClass)
		}
		tw.Flush()
	}
}
