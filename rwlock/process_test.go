package rwlock_test

// A test whose contenders are separate OS processes: the test binary
// re-run (os.Args[0] -test.run=^TestRWLockHelperProcess$) with its role in
// the environment, the idiom Go's own os/exec tests use.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// Environment of a helper process.
const (
	rwEnvRole    = "ZKRW_HELPER"  // "record"
	rwEnvServers = "ZKRW_SERVERS" // comma-separated host:port
	rwEnvPath    = "ZKRW_PATH"    // lock path
	rwEnvRecord  = "ZKRW_RECORD"  // the record: znodes <record>/a and <record>/b
	rwEnvOut     = "ZKRW_OUT"     // holds are appended to <out>.write and <out>.read
	rwEnvWriters = "ZKRW_WRITERS" // writer goroutines
	rwEnvReaders = "ZKRW_READERS" // reader goroutines
	rwEnvIters   = "ZKRW_ITERS"   // iterations per goroutine
)

// TestRWLockHelperProcess is not a test: it is the body of the helper
// processes TestSharedRecordAcrossProcesses starts. It returns at once
// unless ZKRW_HELPER is set.
func TestRWLockHelperProcess(t *testing.T) {
	rwHelpers.Run(map[string]func() error{"record": rwHelperRecord})
}

// rwHelpers starts the helper processes.
var rwHelpers = testutil.Helpers{Test: "TestRWLockHelperProcess", RoleEnv: rwEnvRole}

// rwRecord is a record of two fields, each its own znode, written by two
// separate requests: a reader that runs between a writer's two writes
// sees them disagree (a torn write), and two writers at once lose an
// increment.
type rwRecord struct {
	conn *zk.Conn
	a, b string
}

func (r rwRecord) field(path string) (int, error) {
	data, _, err := r.conn.Get(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(data))
}

// read returns both fields, or an error if they disagree.
func (r rwRecord) read() (int, error) {
	a, err := r.field(r.a)
	if err != nil {
		return 0, err
	}
	b, err := r.field(r.b)
	if err != nil {
		return 0, err
	}
	if a != b {
		return 0, fmt.Errorf("torn record: a=%d b=%d", a, b)
	}
	return a, nil
}

// increment reads the record and writes both fields back incremented,
// one after the other, unconditionally.
func (r rwRecord) increment() error {
	n, err := r.read()
	if err != nil {
		return err
	}
	v := []byte(strconv.Itoa(n + 1))
	if _, err := r.conn.Set(r.a, v, -1); err != nil {
		return err
	}
	_, err = r.conn.Set(r.b, v, -1)
	return err
}

// rwHelperRecord connects, prints READY, waits for GO on stdin, then runs
// ZKRW_WRITERS goroutines that increment the record under the write lock
// and ZKRW_READERS goroutines that check it under the read lock, each
// ZKRW_ITERS times, on one Client and one RWLock. Holds are appended to
// <ZKRW_OUT>.write and <ZKRW_OUT>.read, each file ending with "done N".
func rwHelperRecord() error {
	servers := strings.Split(os.Getenv(rwEnvServers), ",")
	path, record, out := os.Getenv(rwEnvPath), os.Getenv(rwEnvRecord), os.Getenv(rwEnvOut)
	writers, err1 := testutil.EnvInt(rwEnvWriters)
	readers, err2 := testutil.EnvInt(rwEnvReaders)
	iters, err3 := testutil.EnvInt(rwEnvIters)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	c, err := testutil.Dial(context.Background(), servers, recipes.WithSessionTimeout(4*time.Second))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	rw, err := rwlock.New(c, path)
	if err != nil {
		return err
	}
	rec := rwRecord{conn: c.UnsafeConn(), a: record + "/a", b: record + "/b"}
	files := map[bool]*os.File{}
	for _, w := range []bool{true, false} {
		name := out + ".read"
		if w {
			name = out + ".write"
		}
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		files[w] = f
	}

	fmt.Println("READY")
	if line, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil || strings.TrimSpace(line) != "GO" {
		return fmt.Errorf("waiting for GO: read %q, %v", line, err)
	}

	var (
		fileMu sync.Mutex
		wg     sync.WaitGroup
		errMu  sync.Mutex
		errs   []error
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	for g := range writers + readers {
		writer := g < writers
		lk, work := rw.ReadLock(), func() error { _, err := rec.read(); return err }
		if writer {
			lk, work = rw.WriteLock(), rec.increment
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				lease, err := lk.Acquire(ctx)
				if err != nil {
					fail(fmt.Errorf("goroutine %d (writer %t) iteration %d: lock: %w", g, writer, i, err))
					return
				}
				start := time.Now().UnixNano()
				err = work()
				select {
				case <-lease.Done():
					err = errors.Join(err, errors.New("hold may have been lost during the critical section"))
				default:
				}
				end := time.Now().UnixNano()
				err = errors.Join(err, lk.Release(ctx))
				if err != nil {
					fail(fmt.Errorf("goroutine %d (writer %t) iteration %d: %w", g, writer, i, err))
					return
				}
				fileMu.Lock()
				_, err = fmt.Fprintf(files[writer], "%d %d\n", start, end)
				fileMu.Unlock()
				if err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, w := range []bool{true, false} {
		n := readers * iters
		if w {
			n = writers * iters
		}
		if _, err := fmt.Fprintf(files[w], "done %d\n", n); err != nil {
			return err
		}
		if err := files[w].Close(); err != nil {
			return err
		}
	}
	return nil
}

// TestSharedRecordAcrossProcesses: 3 processes, each with 2 writer and 3
// reader goroutines on one Client, share a record of two fields (two
// znodes, written by two separate requests). Writers increment both under
// the write lock, readers check under the read lock that both agree. No
// reader or writer may ever see the fields disagree (a torn write), the
// final count must equal the number of write acquisitions (no lost
// write), and no recorded write hold may overlap any other hold.
func TestSharedRecordAcrossProcesses(t *testing.T) {
	const (
		procs   = 3
		writers = 2
		readers = 3
		iters   = 12
	)
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := ioConnect(t, zkc)
	id := uuid.NewString()[:8]
	path := "/process/rwlock-" + id
	record := "/record-" + id
	for _, p := range []string{record, record + "/a", record + "/b"} {
		if _, err := c.UnsafeConn().Create(p, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	hs := make([]*testutil.HelperProc, procs)
	outs := make([]string, procs)
	for i := range hs {
		outs[i] = filepath.Join(dir, fmt.Sprintf("proc%d", i))
		hs[i] = rwHelpers.Start(t, fmt.Sprintf("record-%d", i), "record",
			rwEnvServers+"="+strings.Join(zkc.Servers(), ","),
			rwEnvPath+"="+path,
			rwEnvRecord+"="+record,
			rwEnvOut+"="+outs[i],
			rwEnvWriters+"="+strconv.Itoa(writers),
			rwEnvReaders+"="+strconv.Itoa(readers),
			rwEnvIters+"="+strconv.Itoa(iters),
		)
	}
	for _, h := range hs {
		if _, err := h.WaitLine(ctx, "READY"); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, h := range hs {
		if err := h.Send("GO"); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hs {
		if err := h.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)

	var all []rwHold
	writes := 0
	for i, out := range outs {
		for _, w := range []bool{true, false} {
			file, role, want := out+".read", "read", readers*iters
			if w {
				file, role, want = out+".write", "write", writers*iters
			}
			iv, err := interop.ReadIntervals(file, fmt.Sprintf("proc%d-%s", i, role))
			if err != nil {
				t.Fatal(err)
			}
			if len(iv) != want {
				t.Errorf("proc%d recorded %d %s holds, want %d", i, len(iv), role, want)
			}
			if w {
				writes += len(iv)
			}
			for _, h := range iv {
				all = append(all, rwHold{h, w})
			}
		}
	}
	rec := rwRecord{conn: c.UnsafeConn(), a: record + "/a", b: record + "/b"}
	n, err := rec.read()
	if err != nil {
		t.Fatal(err)
	}
	if n != writes {
		t.Errorf("record = %d after %d write acquisitions (lost writes mean two writers at once)", n, writes)
	}
	if err := checkRWHolds(all); err != nil { // sorts all by start
		t.Error(err)
	}
	switches, maxReaders := rwHoldStats(all)
	procSwitches := 0
	for i := 1; i < len(all); i++ {
		if all[i].Who[:5] != all[i-1].Who[:5] { // "procN"
			procSwitches++
		}
	}
	t.Logf("%d holds (%d writes) by %d processes in %v; %d switches between readers and writers, %d between processes; up to %d readers at once",
		len(all), writes, procs, elapsed.Round(time.Millisecond), switches, procSwitches, maxReaders)
	if procSwitches == 0 {
		t.Error("the processes never handed the lock to each other")
	}
	if ps, err := ioNew(t, c, path).Participants(ctx); err != nil || len(ps) != 0 {
		t.Errorf("participants after all released = %v, %v; want none", ps, err)
	}
}
