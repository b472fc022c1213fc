package zktest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

// defaultImage is the official image used when ZooKeeper runs in Docker.
const defaultImage = "zookeeper:3.8"

func containerImage() string {
	if img := os.Getenv(EnvImage); img != "" {
		return img
	}
	if v := requestedVersion(); v != "" {
		return "zookeeper:" + v
	}
	return defaultImage
}

var (
	dockerOnce sync.Once
	dockerOK   bool
)

// dockerAvailable reports whether a Docker engine answers testcontainers'
// health check. The answer is computed once per process. Without Docker it
// returns quickly (testcontainers only looks for a socket) and prints
// nothing.
func dockerAvailable() bool {
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

// containerCluster is a standalone server in a container.
type containerCluster struct {
	ctr  *testcontainers.DockerContainer
	addr string
}

// launchContainer starts the official zookeeper image with the same
// settings the local backend uses and waits until it serves.
func launchContainer(cfg config) (_ *containerCluster, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // may pull the image
	defer cancel()

	tickMs := cfg.tick.Milliseconds()
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
		"JVMFLAGS": "-Xmx128m -XX:+UseSerialGC -Dznode.container.checkIntervalMs=1000 " +
			"-Dzookeeper.extendedTypesEnabled=true -Dzookeeper.4lw.commands.whitelist=*",
	}
	image := containerImage()
	ctr, err := testcontainers.Run(ctx, image,
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithExposedPorts("2181/tcp"),
		testcontainers.WithEnv(env),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("2181/tcp").WithStartupTimeout(2*time.Minute)),
	)
	cc := &containerCluster{ctr: ctr}
	defer func() {
		if err != nil && ctr != nil {
			_ = cc.close()
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("zktest: starting container %s: %w", image, err)
	}
	host, err := ctr.Host(ctx)
	if err != nil {
		return nil, fmt.Errorf("zktest: container host: %w", err)
	}
	port, err := ctr.MappedPort(ctx, "2181/tcp")
	if err != nil {
		return nil, fmt.Errorf("zktest: container port: %w", err)
	}
	cc.addr = net.JoinHostPort(host, port.Port())

	deadline := time.Now().Add(startTimeout)
	for {
		out, err := fourLetter(cc.addr, "srvr", probeTimeout)
		if err == nil {
			if mode, _ := parseKV(out, "Mode", ':'); mode == "standalone" {
				return cc, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("zktest: container %s not serving after %v; last lines of its log:\n%s",
				image, startTimeout, tail(cc.readLog(), 30))
		}
		time.Sleep(pollInterval)
	}
}

// readLog returns the container's output so far.
func (cc *containerCluster) readLog() []byte {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := cc.ctr.Logs(ctx)
	if err != nil {
		return nil
	}
	defer rc.Close()
	data, _ := io.ReadAll(rc)
	return data
}

func (cc *containerCluster) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cc.ctr.Terminate(ctx); err != nil {
		return fmt.Errorf("zktest: terminating container: %w", err)
	}
	return nil
}
