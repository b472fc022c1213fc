// Package zkdocker lets zktest start ZooKeeper in a Docker container, for
// machines with neither a local installation nor ZK_TEST_SERVERS. Import it
// for its effect, in a test file:
//
//	import _ "github.com/zkrecipes/zkrecipes/recipes/zktest/zkdocker"
//
// zktest.Start, StartEnsemble and Launch then try, after ZK_TEST_SERVERS
// and a local installation, a Docker engine found by testcontainers-go
// (the local socket, or DOCKER_HOST): they start a standalone server from
// the official image, zookeeper:3.8, or zookeeper:<ZK_TEST_VERSION> when
// that is set, or ZK_TEST_IMAGE. The server gets the settings zktest gives
// its own (tickTime, every four-letter word, container and TTL nodes), it
// is not Controllable, and ensembles of more than one member are not
// offered. With no Docker engine either, zktest's error says so.
//
// It is a package of its own because testcontainers-go brings Docker's
// client and OpenTelemetry, about fifty modules, into the go.mod of every
// module that imports it; zktest alone brings none of them.
package zkdocker

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/zktest/internal/launcher"
)

// EnvImage overrides the image the server is started from (default
// "zookeeper:3.8", or "zookeeper:<ZK_TEST_VERSION>" when that is set).
const EnvImage = "ZK_TEST_IMAGE"

// defaultImage is the official image used when neither ZK_TEST_IMAGE nor
// ZK_TEST_VERSION is set.
const defaultImage = "zookeeper:3.8"

func init() { launcher.Register(docker{}) }

// image returns the image a server is started from.
func image() string {
	if img := strings.TrimSpace(os.Getenv(EnvImage)); img != "" {
		return img
	}
	if v := strings.TrimSpace(os.Getenv(zktest.EnvVersion)); v != "" {
		return "zookeeper:" + v
	}
	return defaultImage
}

var (
	dockerOnce sync.Once
	dockerOK   bool
)

// Available reports whether a Docker engine answers testcontainers' health
// check, that is whether zktest can start a server in a container (when it
// finds none otherwise). The answer is computed once per process. Without
// Docker it returns quickly (testcontainers only looks for a socket) and
// prints nothing.
func Available() bool {
	dockerOnce.Do(func() {
		dockerOK = probeDocker()
	})
	return dockerOK
}

func probeDocker() (ok bool) {
	defer func() {
		// Some testcontainers code paths panic when no Docker host is found.
		if recover() != nil {
			ok = false
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := testcontainers.ProviderDocker.GetProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return false
	}
	if c, ok := p.(io.Closer); ok {
		defer c.Close()
	}
	return p.Health(ctx) == nil
}

// docker is the launcher zktest asks.
type docker struct{}

func (docker) Available() bool { return Available() }

func (docker) Unavailable() string {
	return fmt.Sprintf("run a Docker engine (testcontainers-go found none at DOCKER_HOST or the default socket) "+
		"so the %q image can be started (%s chooses another)", image(), EnvImage)
}

func (docker) Start(spec launcher.Spec) (launcher.Server, error) { return start(spec) }

// server is a standalone server in a container.
type server struct {
	ctr  *testcontainers.DockerContainer
	addr string
}

func (s *server) Addr() string { return s.addr }

// start starts the official zookeeper image with the settings zktest gives
// its own servers and returns once its client port listens; zktest waits
// until it serves.
func start(spec launcher.Spec) (_ *server, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // may pull the image
	defer cancel()

	tickMs := spec.TickTime.Milliseconds()
	if tickMs < 1 {
		tickMs = 1
	}
	env := map[string]string{
		"ZOO_TICK_TIME":              strconv.FormatInt(tickMs, 10),
		"ZOO_4LW_COMMANDS_WHITELIST": "*",
		"ZOO_ADMINSERVER_ENABLED":    "false",
		"ZOO_MAX_CLIENT_CNXNS":       "0",
		"ZOO_CFG_EXTRA": fmt.Sprintf("minSessionTimeout=%d maxSessionTimeout=%d",
			2*tickMs, 20*tickMs),
		"JVMFLAGS": "-Xmx256m -XX:+UseSerialGC -Dznode.container.checkIntervalMs=1000 " +
			"-Dzookeeper.extendedTypesEnabled=true -Dzookeeper.4lw.commands.whitelist=*",
	}
	img := image()
	ctr, err := testcontainers.Run(ctx, img,
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithExposedPorts("2181/tcp"),
		testcontainers.WithEnv(env),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("2181/tcp").WithStartupTimeout(2*time.Minute)),
	)
	s := &server{ctr: ctr}
	defer func() {
		if err != nil && ctr != nil {
			_ = s.Close()
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("zkdocker: starting container %s: %w", img, err)
	}
	host, err := ctr.Host(ctx)
	if err != nil {
		return nil, fmt.Errorf("zkdocker: container %s: host: %w", img, err)
	}
	port, err := ctr.MappedPort(ctx, "2181/tcp")
	if err != nil {
		return nil, fmt.Errorf("zkdocker: container %s: port: %w", img, err)
	}
	s.addr = net.JoinHostPort(host, port.Port())
	return s, nil
}

// Log returns the container's output so far.
func (s *server) Log() []byte {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := s.ctr.Logs(ctx)
	if err != nil {
		return nil
	}
	defer rc.Close()
	data, _ := io.ReadAll(rc)
	return data
}

// Close stops and removes the container.
func (s *server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.ctr.Terminate(ctx); err != nil {
		return fmt.Errorf("zkdocker: terminating container: %w", err)
	}
	return nil
}
