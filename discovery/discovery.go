package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Option configures a Discovery.
type Option func(*config) error

type config struct {
	log     *slog.Logger
	payload payloadType // WithPayload
}

// WithLogger sets the logger (the client's by default): unreadable
// instances and re-registrations are logged at warn.
func WithLogger(l *slog.Logger) Option {
	return recipeargs.Logger(l, func(c *config, l *slog.Logger) { c.log = l })
}

// Discovery registers instances of services under a base path and queries
// them: Curator's ServiceDiscovery.
//
// Each registered instance is kept in existence until Unregister or Close
// (by the engine's owned node, the PersistentNode machinery): made again
// with its latest data when it is gone (its session expired, someone
// deleted it), and left alone otherwise: a reconnection with the session
// alive writes nothing, where Curator deletes and re-creates every
// instance on each reconnection (CURATOR-320). Unregister and Close stop
// that first and then delete the node (a guaranteed delete), so a
// re-registration never follows an unregister (CURATOR-164). Close leaves
// Permanent instances in place (Curator deletes them: CURATOR-94).
//
// An instance node that cannot be read (or, on a Discovery made
// WithPayload, holds a payload of another class) is skipped by the
// queries, logged at warn and counted (Unreadable); it never fails a query
// of many instances. A missing base path or service is an empty answer.
//
// A Discovery is safe for concurrent use.
type Discovery struct {
	c    *recipes.Client
	e    *engine.Client
	base string // namespace-relative
	full string // server path
	log  *slog.Logger
	typ  payloadType // WithPayload; nil reads every payload

	op         sync.Mutex // serializes Register, Update, Unregister, Close
	mu         sync.Mutex
	regs       map[string]*registration // by name + "/" + id
	life       lifecycle.State
	unreadable atomic.Int64
}

type registration struct {
	inst *Instance
	own  *engine.OwnedNode
}

// New returns a Discovery on basePath ("/services" is the common one);
// it touches nothing until used.
func New(c *recipes.Client, basePath string, opts ...Option) (*Discovery, error) {
	if c == nil {
		return nil, recipes.ErrNilClient
	}
	e := (*engine.Client)(c)
	full, err := e.Namespace().Full(basePath)
	if err != nil {
		return nil, err
	}
	cfg := config{log: c.Logger()}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	return &Discovery{c: c, e: e, base: basePath, full: full, log: cfg.log, typ: cfg.payload,
		regs: map[string]*registration{}}, nil
}

// BasePath returns the base path (namespace-relative).
func (d *Discovery) BasePath() string {
	if !d.made() {
		return ""
	}
	return d.base
}

func (d *Discovery) made() bool { return d != nil && d.e != nil }

func notMade() error { return zkerr.NotMade("Discovery", "New") }

// Start starts the discovery (Curator's start; nothing is written). It
// returns recipes.ErrAlreadyStarted the second time.
func (d *Discovery) Start(ctx context.Context) error {
	if !d.made() {
		return notMade()
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	return d.life.Start(d.what())
}

func (d *Discovery) what() string { return "service discovery " + d.base }

func (d *Discovery) errf(format string, args ...any) error {
	return zkerr.Namedf(d.what(), format, args...)
}

func (d *Discovery) usable(ctx context.Context) error {
	if !d.made() {
		return notMade()
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	return d.life.Running(d.what(), "")
}

// checkName checks a service name or an instance id: one path segment.
func checkName(what, s string) error {
	if s == "" || strings.Contains(s, "/") || s == "." || s == ".." || strings.ContainsRune(s, 0) {
		return fmt.Errorf("%w: %s %q is not a node name", recipes.ErrInvalidArgument, what, s)
	}
	return nil
}

func (d *Discovery) servicePath(name string) string { return zkpath.JoinPath(d.full, name) }

func createMode(t ServiceType) (int32, bool, error) {
	switch t {
	case Dynamic, "":
		return zk.FlagEphemeral, false, nil
	case DynamicSequential:
		return zk.FlagEphemeral | zk.FlagSequence, false, nil
	case Static:
		return 0, false, nil
	case Permanent:
		return 0, true, nil
	}
	return 0, false, fmt.Errorf("%w: service type %q", recipes.ErrInvalidArgument, t)
}

// Register registers inst (a copy of it: later changes go through Update)
// and waits within ctx until its node exists. RegistrationTimeUTC is set
// to now when 0, ServiceType to Dynamic when "". Registering an id
// already registered here is an Update. When ctx ends first nothing is
// left registered.
func (d *Discovery) Register(ctx context.Context, inst *Instance) error {
	if err := d.usable(ctx); err != nil {
		return err
	}
	if inst == nil {
		return d.errf("register: %w", fmt.Errorf("%w: nil instance", recipes.ErrInvalidArgument))
	}
	if err := checkName("service name", inst.Name); err != nil {
		return d.errf("register: %w", err)
	}
	if err := checkName("instance id", inst.ID); err != nil {
		return d.errf("register: %w", err)
	}
	in := inst.Clone()
	if in.ServiceType == "" {
		in.ServiceType = Dynamic
	}
	mode, keep, err := createMode(in.ServiceType)
	if err != nil {
		return d.errf("register: %w", err)
	}
	if in.RegistrationTimeUTC == 0 {
		in.RegistrationTimeUTC = time.Now().UnixMilli()
	}
	data, err := d.encode(in)
	if err != nil {
		return d.errf("register: %w", err)
	}
	d.op.Lock()
	defer d.op.Unlock()
	key := in.Name + "/" + in.ID
	d.mu.Lock()
	r := d.regs[key]
	d.mu.Unlock()
	if r != nil {
		if r.inst.ServiceType != in.ServiceType {
			return d.errf("register %s: registered as %s, not %s (unregister it first)", key, r.inst.ServiceType, in.ServiceType)
		}
		return d.update(ctx, r, in, data)
	}
	path := zkpath.JoinPath(d.servicePath(in.Name), in.ID)
	own, err := d.e.Own(engine.OwnedSpec{
		Path: path, Mode: mode, Data: data, KeepOnClose: keep, TakeOver: true,
		What: "service instance " + d.e.Namespace().Strip(path),
	})
	if err != nil {
		return err
	}
	if err := d.awaitOurs(ctx, own, path); err != nil {
		_ = own.Close(context.Background())
		if keep {
			_ = d.deleteNode(context.Background(), path)
		}
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.life.Closed() {
		_ = own.Close(context.Background())
		return d.errf("register %s: %w", key, recipes.ErrClosed)
	}
	d.regs[key] = &registration{inst: in, own: own}
	return nil
}

// encode writes in's node data; a Discovery made WithPayload refuses a
// payload of another class.
func (d *Discovery) encode(in *Instance) ([]byte, error) {
	data, err := in.MarshalJSON()
	if err != nil || d.typ == nil {
		return data, err
	}
	cls, _, err := javaView(in.Payload)
	if err == nil && cls != "" && cls != d.typ.javaClass() {
		err = fmt.Errorf("payload class %q, this discovery's is %q", cls, d.typ.javaClass())
	}
	if err != nil {
		return nil, fmt.Errorf("%w: instance %s/%s: %w", recipes.ErrInvalidArgument, in.Name, in.ID, err)
	}
	return data, nil
}

// awaitOurs waits until own's node exists and is ours. A node of
// another session met by the first create (a crashed predecessor's whose
// session has not expired yet) is deleted as Curator deletes it (TakeOver);
// one made again by a live process with the same id after that is waited
// for until it goes.
func (d *Discovery) awaitOurs(ctx context.Context, own *engine.OwnedNode, path string) error {
	if _, err := own.AwaitOurs(ctx); err != nil {
		return d.errf("register %s: %w", d.e.Namespace().Strip(path), err)
	}
	return nil
}

// Update writes inst as the registered instance's data (its Name and ID
// name it) and waits within ctx until the node holds it; a node made
// again later is made with it (CURATOR-146/181). An instance not
// registered here is an error wrapping recipes.ErrInvalidArgument.
func (d *Discovery) Update(ctx context.Context, inst *Instance) error {
	if err := d.usable(ctx); err != nil {
		return err
	}
	if inst == nil {
		return d.errf("update: %w", fmt.Errorf("%w: nil instance", recipes.ErrInvalidArgument))
	}
	in := inst.Clone()
	d.op.Lock()
	defer d.op.Unlock()
	key := in.Name + "/" + in.ID
	d.mu.Lock()
	r := d.regs[key]
	d.mu.Unlock()
	if r == nil {
		return d.errf("update: %w", fmt.Errorf("%w: instance %s is not registered here", recipes.ErrInvalidArgument, key))
	}
	if in.ServiceType == "" {
		in.ServiceType = r.inst.ServiceType
	}
	if in.ServiceType != r.inst.ServiceType {
		return d.errf("update %s: registered as %s, not %s", key, r.inst.ServiceType, in.ServiceType)
	}
	if in.RegistrationTimeUTC == 0 {
		in.RegistrationTimeUTC = r.inst.RegistrationTimeUTC
	}
	data, err := d.encode(in)
	if err != nil {
		return d.errf("update: %w", err)
	}
	return d.update(ctx, r, in, data)
}

func (d *Discovery) update(ctx context.Context, r *registration, in *Instance, data []byte) error {
	d.mu.Lock()
	r.inst = in
	d.mu.Unlock()
	return r.own.SetData(ctx, data)
}

// Unregister removes the instance name/id: the registration here stops
// first, then its node is deleted with a guaranteed delete (which goes
// on in the background when ctx ends first, until it succeeds or the
// session ends). An instance not registered here is deleted too (a
// Permanent instance an earlier process left, say); a missing node is
// not an error.
func (d *Discovery) Unregister(ctx context.Context, name, id string) error {
	if err := d.usable(ctx); err != nil {
		return err
	}
	if err := checkName("service name", name); err != nil {
		return d.errf("unregister: %w", err)
	}
	if err := checkName("instance id", id); err != nil {
		return d.errf("unregister: %w", err)
	}
	d.op.Lock()
	defer d.op.Unlock()
	key := name + "/" + id
	d.mu.Lock()
	r := d.regs[key]
	delete(d.regs, key)
	d.mu.Unlock()
	path := zkpath.JoinPath(d.servicePath(name), id)
	if r == nil {
		return d.deleteNode(ctx, path)
	}
	if err := r.own.Close(ctx); err != nil {
		return err
	}
	if r.inst.ServiceType == Permanent {
		return d.deleteNode(ctx, path)
	}
	return nil
}

// deleteNode deletes a persistent instance node (own's, when given: a
// sequential one has its own name).
func (d *Discovery) deleteNode(ctx context.Context, path string) error {
	err := d.e.GuaranteedDelete(ctx, path, 0)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return d.errf("unregister %s: %w", d.e.Namespace().Strip(path), err)
	}
	return nil
}

// Registered returns copies of the instances registered here, by name
// then id.
func (d *Discovery) Registered() []*Instance {
	if !d.made() {
		return nil
	}
	d.mu.Lock()
	out := make([]*Instance, 0, len(d.regs))
	for _, r := range d.regs {
		out = append(out, r.inst.Clone())
	}
	d.mu.Unlock()
	sort.Slice(out, func(a, b int) bool {
		if out[a].Name != out[b].Name {
			return out[a].Name < out[b].Name
		}
		return out[a].ID < out[b].ID
	})
	return out
}

// Close unregisters every instance registered here, except Permanent
// ones, which stay (their registration here stops), waiting within ctx
// for the deletes (guaranteed deletes: they go on in the background when
// ctx ends first). It is safe to call more than once.
func (d *Discovery) Close(ctx context.Context) error {
	if !d.made() {
		return notMade()
	}
	if ctx == nil {
		ctx = context.Background()
	}
	d.op.Lock()
	defer d.op.Unlock()
	if first, _ := d.life.Close(); !first {
		return nil
	}
	d.mu.Lock()
	regs := d.regs
	d.regs = map[string]*registration{}
	d.mu.Unlock()
	var errs []error
	for _, r := range regs {
		if err := r.own.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
