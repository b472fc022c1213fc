# zkrecipes: common tasks. Run from the repository root.
#
#   make test    install missing system packages (scripts/install-deps.sh),
#                go vet, then the whole test suite with the race detector
#   make demo    run the bank demo, examples/bank: worker processes contend
#                for a mutex, one is killed, one frozen past its session;
#                ends with a verdict (starts a local ZooKeeper unless
#                ZK_SERVERS names one; DEMO_FLAGS="-workers 5")
#   make bench   run every scenario of the benchmark and write BENCHMARKS.md
#                and BENCHMARKS.svg (BENCH_MD names the report, empty: none;
#                BENCH_FLAGS="-which contended -rounds 5 -duration 5s")
#   make chaos   the chaos suite, kept apart by the build tag "chaos": faults
#                injected for 5 minutes (CHAOS_FLAGS="-duration 1m -seed 7"):
#                every kind on ZooKeeper 3.9.4 or later, the worker faults
#                only on an older server such as Debian's 3.8.0, which loses
#                committed transactions when its members are paused or
#                killed (ZOOKEEPER-4712/4785, see chaos/faults_test.go)
#   make chaos-all  the same with every fault kind on any server, member
#                pauses and kills included (zk-reconfig-replace, a member
#                replaced through reconfiguration, on 3.9.4 or later only)
#   make test-39 the recipe packages' tests (RECIPE_PKGS) on ZooKeeper 3.9
#                with the Curator 5.7 interop, both from Debian's unstable
#                suite as `scripts/install-deps.sh zk39` unpacks them into a
#                cache (scripts/zk39-env.sh sets ZK_TEST_VERSION=3.9 and
#                CURATOR_CLASSPATH), over TLS: ZK_TEST_TLS=1 starts TLS-only
#                servers with client certificates (docs/security.md; the
#                interop tests' servers stay plain, but for Curator's own
#                TLS tests, TestCuratorTLS*)
#   make test-34 the tests of internal/zk34 on Debian 11's ZooKeeper 3.4.13
#                (`scripts/install-deps.sh zk34` unpacks it into a cache):
#                the caches' one-shot fallback, every recipe that needs
#                containers or TTL nodes refusing at once, Connect and its
#                ensemble tracking, on a server older than all of them
#   make chaos-all-39  `make chaos-all` on ZooKeeper 3.9 (member kills and
#                ensemble restarts included), faults paced densely (-pace
#                dense: 80 or more in 5 minutes)
#   make chaos-tls-39  the chaos suite on ZooKeeper 3.9 over TLS (-tls: a
#                TLS-only ensemble with client certificates, every client
#                and worker process over TLS), 60 s of worker faults and
#                leader kills (CHAOS_TLS_FLAGS)
#   make fuzz    run each fuzz target of ./internal/engine for FUZZ_TIME (default
#                150000x: that many inputs, about 10 s each on 2 cores)
#   make vet / make fmt

GO          ?= go
TEST_FLAGS  ?= -race -count=1 -p 1 -timeout 25m
# The defaults keep the whole run under 10 minutes on a 2-core machine.
BENCH_FLAGS ?= -rounds 3 -duration 3s -ops 500 -failovers 3
BENCH_MD    ?= BENCHMARKS.md
DEMO_FLAGS  ?=

.PHONY: all test deps deps-demo vet fmt demo bench

all: vet

test: deps
	$(GO) vet ./...
	$(GO) test $(TEST_FLAGS) ./...

deps:
	bash scripts/install-deps.sh test

deps-demo:
	bash scripts/install-deps.sh demo

vet:
	$(GO) vet ./...

fmt:
	gofmt -s -w .

demo: deps-demo
	$(GO) run ./examples/bank $(DEMO_FLAGS)

bench: deps-demo
	$(GO) run ./examples/bench $(if $(BENCH_MD),-md $(BENCH_MD)) $(BENCH_FLAGS)

CHAOS_FLAGS ?= -duration 5m -seed 1

# The packages of the recipes themselves, which `make test-39` runs on 3.9,
# and internal/sasl (3.9 refuses DIGEST-MD5 in its default FIPS mode).
RECIPE_PKGS ?= ./recipes/... ./internal/engine/... ./internal/sasl/... ./internal/interop/... ./internal/healthy/... ./mutex/... ./rwlock/... ./semaphore/... ./election/... ./cleanup/... ./shared/... ./barrier/... ./atomicval/... ./queue/... ./cache/... ./discovery/... ./nodes/...

CHAOS_TLS_FLAGS ?= -duration 60s -seed 5 -faults kill-holder,blackhole-holder,zk-leader-kill

.PHONY: chaos chaos-all deps-39 test-39 chaos-all-39 chaos-tls-39 deps-34 test-34
chaos: deps-demo
	$(GO) test -tags chaos -race=false -count=1 -timeout 30m -v -run TestChaos ./chaos/ -args $(CHAOS_FLAGS)

chaos-all: deps-demo
	$(GO) test -tags chaos -race=false -count=1 -timeout 30m -v -run TestChaos ./chaos/ -args $(CHAOS_FLAGS) -faults all

deps-39:
	bash scripts/install-deps.sh zk39

test-39: deps deps-39
	env39="$$(bash scripts/zk39-env.sh)" && eval "$$env39" && echo "ZK_TEST_VERSION=$$ZK_TEST_VERSION CURATOR_CLASSPATH=$$CURATOR_CLASSPATH ZK_TEST_TLS=1" && \
		ZK_TEST_TLS=1 $(GO) test $(TEST_FLAGS) $(RECIPE_PKGS)

deps-34:
	bash scripts/install-deps.sh zk34

# The tests start their 3.4 servers themselves (testutil.StartZK34), and
# fail under CI=true when the tree is missing.
test-34: deps-34
	$(GO) test -race -count=1 -p 1 -timeout 5m -run '^TestZK34' ./internal/zk34/

chaos-all-39: deps-demo deps-39
	env39="$$(bash scripts/zk39-env.sh)" && eval "$$env39" && \
		$(GO) test -tags chaos -race=false -count=1 -timeout 30m -v -run TestChaos ./chaos/ -args $(CHAOS_FLAGS) -faults all -pace dense

chaos-tls-39: deps-demo deps-39
	env39="$$(bash scripts/zk39-env.sh)" && eval "$$env39" && \
		$(GO) test -tags chaos -race=false -count=1 -timeout 10m -v -run TestChaos ./chaos/ -args -tls $(CHAOS_TLS_FLAGS)

# One target per go test run (-fuzz takes one). An input that fails is
# written to internal/<package>/testdata/fuzz/<target>/ (zkpath, contend, engine) and runs with every go test.
# A count, not a duration: a -fuzztime duration can fail a run that found
# nothing, with "context deadline exceeded" as the time runs out (a race in
# Go's fuzzing coordinator, golang/go#75804, fixed in Go 1.27).
FUZZ_TIME ?= 150000x

.PHONY: fuzz
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzValidatePath$$' -fuzztime $(FUZZ_TIME) ./internal/zkpath/
	$(GO) test -run '^$$' -fuzz '^FuzzSortKey$$' -fuzztime $(FUZZ_TIME) ./internal/contend/
	$(GO) test -run '^$$' -fuzz '^FuzzProtectedUUID$$' -fuzztime $(FUZZ_TIME) ./internal/engine/
