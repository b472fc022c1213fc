package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkop"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestMisuse feeds the exported constructors and methods of package
// recipes their invalid inputs — bad paths, nil and zero values, a nil
// context, a closed client, arguments a recipe must never pass on — and
// checks that each returns an error matching the right sentinel and that
// none panics or hangs. It extends TestInvalidPathsAndMisuse (client_test.go)
// and does not repeat its rows. Callbacks that run on goroutines of their
// own (a nil listener) are tried in a child process, where a panic cannot
// take the test binary down.
func TestMisuse(t *testing.T) {
	zkc := zktest.Start(t)
	servers := zkc.Servers()
	c := connect(t, servers)
	ctx := context.Background()
	driver := &contend.Driver{Names: []string{"lock-"}}

	closed, err := testutil.Dial(context.Background(), servers)
	require.NoError(t, err)
	require.NoError(t, closed.Close(context.Background()))
	var nilClient *recipes.Client

	badPaths := []string{"", "rel", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/nul\x00"}
	onTerm := func(*engine.Hold) {}
	short := func() (context.Context, context.CancelFunc) {
		// For calls that a bug could make wait forever: the row then fails
		// with the deadline instead of the sentinel it wants.
		return context.WithTimeout(ctx, 3*time.Second)
	}

	var cases misuseTable
	add, tolerate := cases.Add, cases.Tolerate
	invalidPath := []error{recipes.ErrInvalidPath}
	invalidArg := []error{recipes.ErrInvalidArgument}
	nilClientErr := []error{recipes.ErrNilClient}
	closedErr := []error{recipes.ErrClosed}
	noError := []error(nil)

	// Recipe paths, and the helpers that take any string.
	for _, p := range badPaths {
		add(fmt.Sprintf("FullPath(%q)", p), invalidPath, func() error { _, err := c.FullPath(p); return err })
		add(fmt.Sprintf("SplitPath(%q)", p), noError, func() error { zkpath.SplitPath(p); return nil })
		add(fmt.Sprintf("JoinPath(%q,%q)", p, p), noError, func() error { zkpath.JoinPath(p, p); return nil })
		add(fmt.Sprintf("SortKey(%q,%q)", p, p), noError, func() error { contend.SortKey(p, p, p, ""); return nil })
	}
	// The server refuses a character outside the BMP (Java sees a surrogate
	// pair), so a path holding one can never be created.
	add(`FullPath("/\U0001F600")`, invalidPath, func() error { _, err := c.FullPath("/\U0001F600"); return err })
	add("SortKey empty lock name", noError, func() error { contend.SortKey("_c_x-lock-0000000001", ""); return nil })

	// Connect, NewClient and the options TestInvalidPathsAndMisuse does not try.
	add("Connect(no servers)", invalidArg, func() error { return connectErr([]string{}) })
	add(`Connect("")`, invalidArg, func() error {
		return connectErr([]string{""}, recipes.WithConnectTimeout(2*time.Second))
	})
	for name, opt := range map[string]recipes.Option{
		"WithSessionTimeout(-1s)":   recipes.WithSessionTimeout(-time.Second),
		"WithDialer(nil)":           recipes.WithDialer(nil),
		"WithHostProvider(nil)":     recipes.WithHostProvider(nil),
		"WithErrorPolicy(-1)":       recipes.WithErrorPolicy(-1),
		"WithMaxBufferSize(-1)":     recipes.WithMaxBufferSize(-1),
		`WithNamespace("/a//b")`:    recipes.WithNamespace("/a//b"),
		`WithNamespace("/a/./b")`:   recipes.WithNamespace("/a/./b"),
		`WithNamespace("a/../b")`:   recipes.WithNamespace("a/../b"),
		`WithNamespace("/nul\x00")`: recipes.WithNamespace("/nul\x00"),
	} {
		// Against the real server: an option that is wrongly accepted
		// connects (and is closed) instead of waiting for a dead address.
		add("Connect "+name, invalidArg, func() error {
			return connectErr(servers, opt, recipes.WithConnectTimeout(5*time.Second))
		})
	}
	add("NewClient(conn, nil events)", invalidArg, func() error {
		conn, _, err := zk.Connect(servers, 4*time.Second, testutil.ZKTLS(servers), zk.WithLogInfo(false))
		if err != nil {
			return err
		}
		defer conn.Close()
		_, err = recipes.NewClient(context.Background(), conn, nil)
		return err
	})
	add("NewClient(conn, events, nil option)", invalidArg, func() error {
		conn, events, err := zk.Connect(servers, 4*time.Second, testutil.ZKTLS(servers), zk.WithLogInfo(false))
		if err != nil {
			return err
		}
		defer conn.Close()
		_, err = recipes.NewClient(context.Background(), conn, events, nil)
		return err
	})

	// Every method that returns an error, on a nil *Client, on a zero
	// Client and on a closed one. (A nil Client's FullPath, Check and
	// Close, and a few closed-client calls, are in TestInvalidPathsAndMisuse.)
	// The go-zookeeper calls the Client counts (Create, Get...) are one row
	// per kind of client.
	retryable := func() error { return zk.ErrConnectionClosed }
	for _, cl := range []struct {
		what string
		c    func() *recipes.Client
		want []error
	}{
		{"nil Client", func() *recipes.Client { return nilClient }, nilClientErr},
		{"zero Client", func() *recipes.Client { return new(recipes.Client) }, nilClientErr},
		{"closed Client", func() *recipes.Client { return closed }, closedErr},
	} {
		m := func(name string, call func(c *recipes.Client) error) {
			add(cl.what+"."+name, cl.want, func() error { return call(cl.c()) })
		}
		if cl.what == "zero Client" {
			m("Check", func(c *recipes.Client) error { return (*engine.Client)(c).Check() })
			m("Close", func(c *recipes.Client) error { return c.Close(context.Background()) })
		}
		if cl.what != "closed Client" {
			add(cl.what+" accessors", noError, func() error { return unmadeAccessors(cl.c()) })
			m("FullPath", func(c *recipes.Client) error { _, err := c.FullPath("/x"); return err })
		}
		if cl.what != "closed Client" { // these three are in TestInvalidPathsAndMisuse
			m("AddAuth", func(c *recipes.Client) error { return c.AddAuth(context.Background(), "digest", []byte("a:b")) })
			m("WaitConnected", func(c *recipes.Client) error { return c.WaitConnected(ctx) })
			m("Enter", func(c *recipes.Client) error {
				_, err := (*engine.Client)(c).Enter(ctx, "/misuse", "lock-", nil, driver)
				return err
			})
		}
		m("EnsureContainers", func(c *recipes.Client) error { return (*engine.Client)(c).EnsureContainers(ctx, "/misuse/a/b") })
		m("Participate", func(c *recipes.Client) error {
			return (*engine.Client)(c).Participate(ctx, engine.Participation{Parent: "/misuse", LockName: "latch-", Driver: driver, OnTerm: onTerm})
		})
		switch cl.what {
		case "nil Client":
			m("GuaranteedDelete", func(c *recipes.Client) error { return (*engine.Client)(c).GuaranteedDelete(ctx, "/misuse/x", 0) })
		case "closed Client":
			// The session ended with Close, and its nodes with it: nil is a
			// fair answer too.
			tolerate(cl.what+".GuaranteedDelete", cl.want, func() error { return (*engine.Client)(cl.c()).GuaranteedDelete(ctx, "/misuse/x", 0) })
		} // a zero Client's panics on a goroutine of its own: tried in a child process, below
		m("Retry(an op that fails with a connection loss)", func(c *recipes.Client) error { return c.Retry(ctx, retryable) })
		add(cl.what+": go-zookeeper calls", noError, misuseEach(cl.want, []misuseSub{
			{Name: "Create", Call: func() error { _, err := cl.c().Create(ctx, "/misuse", nil, 0); return err }},
			{Name: "Delete", Call: func() error { return cl.c().Delete(ctx, "/misuse", -1) }},
			{Name: "Get", Call: func() error { _, _, err := cl.c().Get(ctx, "/"); return err }},
			{Name: "GetW", Call: func() error { _, _, _, err := (*engine.Client)(cl.c()).GetW(ctx, "/"); return err }},
			{Name: "Exists", Call: func() error { _, _, err := cl.c().Exists(ctx, "/"); return err }},
			{Name: "ExistsW", Call: func() error { _, _, _, err := (*engine.Client)(cl.c()).ExistsW(ctx, "/"); return err }},
			{Name: "Children", Call: func() error { _, _, err := cl.c().Children(ctx, "/"); return err }},
			{Name: "ChildrenW", Call: func() error { _, _, _, err := (*engine.Client)(cl.c()).ChildrenW(ctx, "/"); return err }},
			{Name: "Set", Call: func() error { _, err := cl.c().Set(ctx, "/misuse", nil, -1); return err }},
			{Name: "Sync", Call: func() error { return cl.c().Sync(ctx, "/") }},
			{Name: "Multi", Call: func() error { _, err := cl.c().Multi(ctx, recipes.CheckOp("/", -1)); return err }},
			{Name: "Client.GetW", Call: func() error { _, _, _, err := cl.c().GetW(ctx, "/"); return err }},
			{Name: "Client.ExistsW", Call: func() error { _, _, _, err := cl.c().ExistsW(ctx, "/"); return err }},
			{Name: "Client.ChildrenW", Call: func() error { _, _, _, err := cl.c().ChildrenW(ctx, "/"); return err }},
			{Name: "Client.CreateWithParents", Call: func() error { _, err := cl.c().CreateWithParents(ctx, "/misuse/x", nil, 0); return err }},
			{Name: "Client.WatchPersistent", Call: func() error {
				_, err := cl.c().WatchPersistent(ctx, "/", true, func(recipes.PersistentEvent) {})
				return err
			}},
		}))
	}
	add("closed Client.Listen", noError, func() error {
		remove := closed.Listen(func(recipes.State) {})
		remove()
		return nil
	})
	add("closed Client.Subscribe", noError, func() error {
		ch, cancel := closed.Subscribe()
		defer cancel()
		select {
		case _, ok := <-ch:
			if ok {
				return errors.New("a state arrived on a closed client")
			}
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("the channel of a closed client stays open")
		}
	})

	// Server paths that go-zookeeper or the server would refuse, given to
	// the Client's server-path methods: one row per method, every bad path.
	serverPathRow := func(name string, call func(ctx context.Context, p string) error) {
		var subs []misuseSub
		for _, p := range badPaths {
			subs = append(subs, misuseSub{Name: fmt.Sprintf("%q", p), Call: func() error {
				ctx, cancel := short()
				defer cancel()
				return call(ctx, p)
			}})
		}
		add(name+"(bad server paths)", noError, misuseEach(invalidPath, subs))
	}
	serverPathRow("EnsureContainers", func(ctx context.Context, p string) error { return (*engine.Client)(c).EnsureContainers(ctx, p) })
	serverPathRow("Enter", func(ctx context.Context, p string) error {
		ct, err := (*engine.Client)(c).Enter(ctx, p, "lock-", nil, driver)
		if err == nil {
			_ = ct.Leave(ctx)
		}
		return err
	})
	serverPathRow("Participate", func(ctx context.Context, p string) error {
		return (*engine.Client)(c).Participate(ctx, engine.Participation{Parent: p, LockName: "latch-", Driver: driver, OnTerm: onTerm})
	})
	serverPathRow("GuaranteedDelete", func(ctx context.Context, p string) error { return (*engine.Client)(c).GuaranteedDelete(ctx, p, 0) })

	// Names a recipe builds its node names from.
	for _, name := range []string{"a/b", "nul\x00"} {
		add(fmt.Sprintf("Enter(lockName %q)", name), []error{recipes.ErrInvalidArgument, recipes.ErrInvalidPath}, func() error {
			ctx, cancel := short()
			defer cancel()
			ct, err := (*engine.Client)(c).Enter(ctx, "/misuse/names", name, nil, driver)
			if err == nil {
				_ = ct.Leave(ctx)
			}
			return err
		})
	}
	add(`Enter(lockName "")`, invalidArg, func() error {
		ct, err := (*engine.Client)(c).Enter(ctx, "/misuse/names", "", nil, driver)
		if err == nil {
			_ = ct.Leave(ctx)
		}
		return err
	})
	add("Enter(nil driver)", invalidArg, func() error { _, err := (*engine.Client)(c).Enter(ctx, "/misuse/d", "lock-", nil, nil); return err })
	add("Enter(nil EnterOption)", noError, func() error {
		ct, err := (*engine.Client)(c).Enter(ctx, "/misuse/opt", "lock-", nil, driver, nil)
		if err != nil {
			return err
		}
		return ct.Leave(ctx)
	})
	for _, seq := range []string{"", "/x", "../x", "abc"} {
		// A fixed node must sort where a sequential node sorts.
		add(fmt.Sprintf("Enter(EnterAtSequence(%q))", seq), invalidArg, func() error {
			ctx, cancel := short()
			defer cancel()
			parent := "/misuse/seq" + fmt.Sprint(len(seq))
			holder, err := (*engine.Client)(c).Enter(ctx, parent, "lock-", nil, driver)
			if err != nil {
				return err
			}
			defer holder.Leave(ctx)
			if held, _, err := holder.Acquire(ctx, false); !held {
				return fmt.Errorf("the first contender does not hold: %w", err)
			}
			ct, err := (*engine.Client)(c).Enter(ctx, parent, "lock-", nil, driver, engine.EnterAtSequence(seq))
			if err != nil {
				return err
			}
			defer ct.Leave(ctx)
			if held, _, _ := ct.Acquire(ctx, false); held {
				return fmt.Errorf("accepted, and %s holds while %s holds: mutual exclusion broken", ct.Node().Name, holder.Node().Name)
			}
			return fmt.Errorf("accepted: %s", ct.Node().Name)
		})
	}
	add("Participate(no driver)", invalidArg, func() error {
		return (*engine.Client)(c).Participate(ctx, engine.Participation{Parent: "/misuse/p", LockName: "latch-", OnTerm: onTerm})
	})
	add("Participate(no OnTerm)", invalidArg, func() error {
		return (*engine.Client)(c).Participate(ctx, engine.Participation{Parent: "/misuse/p", LockName: "latch-", Driver: driver})
	})

	// A nil context: refused, or (for a call that need not wait) taken as
	// context.Background(); never a panic.
	var nilCtx context.Context
	tolerate("WaitConnected(nil ctx)", invalidArg, func() error { return c.WaitConnected(nilCtx) })
	tolerate("EnsureContainers(nil ctx)", invalidArg, func() error { return (*engine.Client)(c).EnsureContainers(nilCtx, "/misuse/nilctx/a") })
	tolerate("Enter(nil ctx)", invalidArg, func() error {
		ct, err := (*engine.Client)(c).Enter(nilCtx, "/misuse/nilctx", "lock-", nil, driver)
		if err == nil {
			_ = ct.Leave(ctx)
		}
		return err
	})
	// Participate runs until its ctx ends: with a nil one it never could.
	add("Participate(nil ctx)", invalidArg, func() error {
		return (*engine.Client)(c).Participate(nilCtx, engine.Participation{Parent: "/misuse/nilctx", LockName: "latch-", Driver: driver, OnTerm: onTerm})
	})
	tolerate("GuaranteedDelete(nil ctx)", invalidArg, func() error { return (*engine.Client)(c).GuaranteedDelete(nilCtx, "/misuse/none", 0) })
	tolerate("Retry(nil ctx)", invalidArg, func() error { return c.Retry(nilCtx, func() error { return nil }) })
	tolerate("Retry(nil ctx) after a connection loss", invalidArg, func() error {
		failed := false
		return c.Retry(nilCtx, func() error {
			if !failed {
				failed = true
				return zk.ErrConnectionClosed // retryable: Retry waits before the next attempt
			}
			return nil
		})
	})
	tolerate("Retry(nil op)", invalidArg, func() error { return c.Retry(ctx, nil) })

	// Contests and holds.
	enter := func(parent string) (*engine.Contest, error) {
		return (*engine.Client)(c).Enter(ctx, parent, "lock-", nil, driver)
	}
	tolerate("Contest.Acquire(nil ctx)", invalidArg, func() error {
		ct, err := enter("/misuse/ct/nilacquire")
		if err != nil {
			return err
		}
		defer ct.Leave(ctx)
		_, _, err = ct.Acquire(nilCtx, true)
		return err
	})
	tolerate("Contest.AwaitCount(nil ctx)", invalidArg, func() error {
		ct, err := (*engine.Client)(c).Enter(ctx, "/misuse/ct/nilcount", "lease-", nil, driver)
		if err != nil {
			return err
		}
		defer ct.Leave(ctx)
		_, err = ct.AwaitCount(nilCtx, engine.FixedLimit(1), true)
		return err
	})
	tolerate("Contest.Leave(nil ctx)", invalidArg, func() error {
		ct, err := enter("/misuse/ct/nilleave")
		if err != nil {
			return err
		}
		err = ct.Leave(nilCtx)
		_ = ct.Leave(ctx)
		return err
	})
	add("Contest.Leave twice", noError, func() error {
		ct, err := enter("/misuse/ct/twice")
		if err != nil {
			return err
		}
		if err := ct.Leave(ctx); err != nil {
			return err
		}
		return ct.Leave(ctx)
	})
	add("Contest.Acquire after Leave", []error{recipes.ErrNotHeld, recipes.ErrInvalidArgument, recipes.ErrLockLost}, func() error {
		ct, err := enter("/misuse/ct/afterleave")
		if err != nil {
			return err
		}
		if err := ct.Leave(ctx); err != nil {
			return err
		}
		actx, cancel := short()
		defer cancel()
		held, _, err := ct.Acquire(actx, true)
		if held {
			return errors.New("a contest that left holds again")
		}
		return err
	})
	add("Contest.AwaitCount(nil limit)", invalidArg, func() error {
		ct, err := (*engine.Client)(c).Enter(ctx, "/misuse/ct/nillimit", "lease-", nil, driver)
		if err != nil {
			return err
		}
		defer ct.Leave(ctx)
		_, err = ct.AwaitCount(ctx, nil, false)
		return err
	})
	zeroContest := []error{recipes.ErrInvalidArgument, recipes.ErrNilClient}
	add("zero Contest.Acquire", zeroContest, func() error { _, _, err := new(engine.Contest).Acquire(ctx, true); return err })
	add("zero Contest.AwaitCount", zeroContest, func() error {
		_, err := new(engine.Contest).AwaitCount(ctx, engine.FixedLimit(1), false)
		return err
	})
	add("zero Contest.Leave", append(zeroContest, nil), func() error { return new(engine.Contest).Leave(ctx) })
	add("zero Contest accessors", noError, func() error {
		ct := new(engine.Contest)
		_, _, _ = ct.Path(), ct.Node(), ct.Session()
		return nil
	})
	nilHold := []error{recipes.ErrNilClient, recipes.ErrInvalidArgument}
	add("NewHold(nil client).Token", nilHold, func() error {
		_, err := engine.NewHold(nil, "/misuse/x", engine.Signals{}).Token(ctx)
		return err
	})
	add("NewHold(nil client).Fenced", nilHold, func() error {
		_, err := engine.NewHold(nil, "/misuse/x", engine.Signals{}).Fenced(ctx)
		return err
	})
	withHold := func(parent string, use func(h *engine.Hold) error) func() error {
		return func() error {
			ct, err := enter(parent)
			if err != nil {
				return err
			}
			defer ct.Leave(ctx)
			held, sig, err := ct.Acquire(ctx, false)
			if err != nil || !held {
				return fmt.Errorf("not held (%w)", err)
			}
			return use(engine.NewHold((*engine.Client)(c), ct.Path(), sig))
		}
	}
	tolerate("Hold.Token(nil ctx)", invalidArg, withHold("/misuse/hold/token", func(h *engine.Hold) error {
		_, err := h.Token(nilCtx)
		return err
	}))
	tolerate("Hold.Fenced(nil ctx)", invalidArg, withHold("/misuse/hold/fenced", func(h *engine.Hold) error {
		_, err := h.Fenced(nilCtx)
		return err
	}))
	add("Hold.Fenced(a zero Op)", invalidArg, withHold("/misuse/hold/zeroop", func(h *engine.Hold) error {
		_, err := h.Fenced(ctx, zkop.Op{})
		return err
	}))
	add("Hold.Fenced(a zero Op after a good one)", invalidArg, withHold("/misuse/hold/zeroop2", func(h *engine.Hold) error {
		_, err := h.Fenced(ctx, zkop.Check("/", -1), zkop.Op{})
		return err
	}))

	// Listeners, and values with no error to return.
	add("zero Listeners Post, Close, Close", noError, func() error {
		var ls notify.Listeners[int]
		ls.Post(1)
		ls.Close()
		ls.Close()
		return nil
	})
	add("Listeners.Subscribe after Close", noError, func() error {
		var ls notify.Listeners[int]
		ls.Close()
		ch, cancel := ls.Subscribe()
		defer cancel()
		select {
		case _, ok := <-ch:
			if ok {
				return errors.New("a value on a closed Listeners")
			}
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("Subscribe after Close returned an open channel")
		}
	})
	add("Listeners.Listen remove twice", noError, func() error {
		var ls notify.Listeners[int]
		remove := ls.Listen(func(int) {})
		remove()
		remove()
		ls.Close()
		return nil
	})
	add("unknown State and ErrorPolicy", noError, func() error {
		_ = recipes.State(99).String()
		_ = recipes.State(-1).IsConnected()
		_ = recipes.ErrorPolicy(9).String()
		_ = recipes.ErrorPolicy(9).IsError(recipes.StateSuspended)
		return nil
	})
	add("SortContenders(nil)", noError, func() error { contend.SortContenders(nil, driver); return nil })
	add("zero Driver", noError, func() error {
		var d contend.Driver
		_ = d.SortKey("_c_x-lock-0000000001")
		_ = d.Decide(nil)
		_ = d.Decide([]contend.Contender{{Name: "a"}})
		return nil
	})

	// Callbacks that would panic on a goroutine of their own: in a child.
	add("Listeners.Listen(nil) then Post", noError, misuseChildren.InChild("listeners-nil", servers))
	add("Client.Listen(nil) then a state change", noError, misuseChildren.InChild("client-listen-nil", servers))
	add("zero Client.GuaranteedDelete", noError, misuseChildren.InChild("zero-client-guaranteed-delete", servers))

	runMisuse(t, cases)
}

// connectErr connects and closes at once, returning Connect's error.
func connectErr(servers []string, opts ...recipes.Option) error {
	c, err := testutil.Dial(context.Background(), servers, opts...)
	if err == nil {
		c.Close(context.Background())
	}
	return err
}

// unmadeAccessors checks that the methods of a nil or zero Client that
// return no error give zero values, and do not panic or block.
func unmadeAccessors(c *recipes.Client) error {
	select {
	case <-c.Done():
	default:
		return errors.New("Done is open")
	}
	if c.UnsafeConn() != nil || c.Namespace() != "" || c.SessionTimeout() != 0 || c.SessionID() != 0 {
		return errors.New("a connection, namespace, session timeout or session")
	}
	if c.State() != recipes.StateLatent || c.ErrorPolicy() != recipes.PolicyStandard {
		return fmt.Errorf("state %v, policy %v", c.State(), c.ErrorPolicy())
	}
	if c.Logger() == nil {
		return errors.New("a nil Logger")
	}
	c.Logger().Warn("nobody hears this")
	c.Listen(func(recipes.State) { panic("a state of no client") })()
	ch, cancel := c.Subscribe()
	defer cancel()
	if _, ok := <-ch; ok {
		return errors.New("a state of no client")
	}
	e := (*engine.Client)(c)
	if e.Stats() != (metric.RequestCounts{}) || e.ConnSessionID() != 0 || e.ReadOrder() != 0 || e.EnsembleServers() != nil {
		return errors.New("engine: stats, a session, a read order or servers")
	}
	if s := e.Snapshot(); !notify.IsClosed(s.Lost) || !notify.IsClosed(e.HoldSignal(s)) {
		return errors.New("engine: a Snapshot's signals are open")
	}
	if a := e.ReadAsync(context.Background(), "/", false); !errors.Is(a.Err, recipes.ErrNilClient) {
		return fmt.Errorf("engine: ReadAsync: %v, want ErrNilClient", a.Err)
	}
	return nil
}

// Child processes: TestMisuseChild runs one of misuseChildren when the
// environment names it (testutil.MisuseChildren), and is skipped otherwise.

var misuseChildren = testutil.MisuseChildren{
	"listeners-nil": func(t *testing.T, _ []string) {
		var ls notify.Listeners[int]
		ls.Listen(nil)
		ch, cancel := ls.Subscribe()
		defer cancel()
		ls.Post(1)
		<-ch // the nil listener's goroutine has had its value too
		ls.Close()
	},
	"zero-client-guaranteed-delete": func(t *testing.T, _ []string) {
		err := (*engine.Client)(new(recipes.Client)).GuaranteedDelete(context.Background(), "/misuse/x", 0)
		if !errors.Is(err, recipes.ErrNilClient) {
			t.Errorf("zero Client.GuaranteedDelete: %v, want ErrNilClient", err)
		}
	},
	"client-listen-nil": func(t *testing.T, servers []string) {
		proxy := zktest.NewProxy(t, servers[0])
		c, err := testutil.Dial(context.Background(), []string{proxy.Addr()})
		require.NoError(t, err)
		defer c.Close(context.Background())
		c.Listen(nil)
		states, cancel := c.Subscribe()
		defer cancel()
		proxy.Cut()
		for s := range states {
			if s == recipes.StateReconnected {
				break
			}
		}
	},
}

func TestMisuseChild(t *testing.T) { misuseChildren.RunChild(t) }

// The misuse-table machinery is shared: internal/testutil/misuse.go.
type (
	misuseTable = testutil.MisuseTable
	misuseSub   = testutil.MisuseSub
)

var (
	runMisuse  = testutil.RunMisuse
	misuseEach = testutil.MisuseEach
)
