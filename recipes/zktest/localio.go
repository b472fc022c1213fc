package zktest

// The local servers' files, ports and log output.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// removeStaleDirs removes, once per process, the directories of clusters
// whose process died without cleaning up (a test binary killed by its
// timeout, say; its servers died with it).
func removeStaleDirs() {
	staleOnce.Do(func() {
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, ownerFile))
			if err != nil {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 0 || pid == os.Getpid() || !processGone(pid) {
				continue
			}
			_ = os.RemoveAll(d)
		}
	})
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. All listeners
// are held until every port is known so no port is returned twice; another
// process may still take one before the server binds it (launchLocal then
// retries).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// lockedWriter serializes writes of several members to one io.Writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// prefixWriter writes whole lines, each prefixed, to a lockedWriter.
type prefixWriter struct {
	lw     *lockedWriter
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	var out []byte
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		out = append(out, p.prefix...)
		out = append(out, p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
	}
	if len(out) > 0 {
		p.lw.mu.Lock()
		_, _ = p.lw.w.Write(out) // the log file is what matters; ignore errors here
		p.lw.mu.Unlock()
	}
	return len(b), nil
}

// flush writes a last partial line. It is called once the process is gone.
func (p *prefixWriter) flush() {
	if len(p.buf) == 0 {
		return
	}
	p.lw.mu.Lock()
	_, _ = p.lw.w.Write(append(append([]byte(p.prefix), p.buf...), '\n'))
	p.lw.mu.Unlock()
	p.buf = nil
}
