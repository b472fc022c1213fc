package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Discovery is a service discovery path (curator-x-discovery's layout,
// package discovery): a base path with its services, or one service.
type Discovery struct {
	// Base is the base path, "" when <path> is one service.
	Base     string    `json:"base,omitempty"`
	Services []Service `json:"services"`
}

// Service is one service and its instances, by node name. Instances
// lists every child, the unreadable ones too (Error set); Readable and
// Unreadable count them apart, as a query would: it returns the readable
// ones only.
type Service struct {
	Name       string     `json:"name"`
	Path       string     `json:"path"`
	Readable   int        `json:"readable"`
	Unreadable int        `json:"unreadable"`
	Instances  []Instance `json:"instances"`
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

// instanceOf reads the child k of the service named service as an
// instance: an error says why it is none (not authorised to read it, data
// that is no instance's JSON, an instance of another service).
func instanceOf(service string, k child) (*discovery.Instance, error) {
	if k.st == nil {
		return nil, errors.New("not authorised to read it (NoAuth): an ACL protects it; give -auth")
	}
	inst, err := discovery.Decode(k.data)
	switch {
	case err != nil:
		return nil, err
	case inst.Name != service:
		return nil, fmt.Errorf("an instance of service %q, not of %q", inst.Name, service)
	}
	return inst, nil
}

// isService reports whether p is one service: children without children
// (or that the session may not read), at least one of them an instance of
// the service p names. Data that is no JSON object is not decoded.
func isService(p *probe) bool {
	_, name := zkpath.SplitPath(p.path)
	found := false
	for _, k := range p.kids {
		if k.st != nil && k.st.NumChildren > 0 {
			return false
		}
		if !found && k.st != nil && bytes.HasPrefix(bytes.TrimSpace(k.data), []byte("{")) {
			_, err := instanceOf(name, k)
			found = err == nil
		}
	}
	return found
}

// serviceOf reads p as one service (isService): every child is listed,
// an instance or unreadable. It returns nil when p is not one.
func serviceOf(r *reader, p *probe) *Service {
	if !isService(p) {
		return nil
	}
	_, name := zkpath.SplitPath(p.path)
	svc := &Service{Name: name, Path: p.path, Instances: []Instance{}}
	for _, k := range p.kids {
		in := Instance{Node: k.name, Session: "?"}
		if k.st != nil {
			in.Session = ""
			in.Ctime = time.UnixMilli(k.st.Ctime)
			in.age = r.now.Sub(in.Ctime)
			in.AgeMS = in.age.Milliseconds()
			if k.st.EphemeralOwner != 0 {
				in.Session = fmt.Sprintf("0x%016x", k.st.EphemeralOwner)
			}
		}
		inst, err := instanceOf(name, k)
		if err != nil {
			in.Error = err.Error()
			svc.Unreadable++
		} else {
			svc.Readable++
			in.ID, in.Address, in.Port, in.SSLPort = inst.ID, inst.Address, inst.Port, inst.SSLPort
			in.Type, in.Enabled, in.RegistrationTimeUTC = string(inst.ServiceType), inst.IsEnabled(), inst.RegistrationTimeUTC
			in.URI, in.PayloadClass = inst.BuildURI(nil), inst.PayloadClass()
		}
		svc.Instances = append(svc.Instances, in)
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

// counted says n of a noun: "1 instance", "2 instances".
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// instances says how many instances are readable, and how many nodes are
// not ("3 instances, 1 unreadable").
func instances(readable, unreadable int) string {
	s := counted(readable, "instance")
	if unreadable > 0 {
		s += fmt.Sprintf(", %d unreadable", unreadable)
	}
	return s
}

func renderDiscovery(b *strings.Builder, d *Discovery) {
	readable, unreadable := 0, 0
	for _, s := range d.Services {
		readable += s.Readable
		unreadable += s.Unreadable
	}
	if d.Base != "" {
		fmt.Fprintf(b, "%s: service discovery base path (curator-x-discovery), %s, %s\n", d.Base, counted(len(d.Services), "service"), instances(readable, unreadable))
	}
	for _, s := range d.Services {
		fmt.Fprintf(b, "service %s (%s): %s\n", s.Name, s.Path, instances(s.Readable, s.Unreadable))
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
