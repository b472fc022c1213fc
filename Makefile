# zkrecipes: common tasks. Run from the repository root.
#
#   make test    install missing system packages (scripts/install-deps.sh),
#                go vet, then the whole test suite with the race detector
#   make demo    run the mutex example (starts a local ZooKeeper unless
#                ZK_SERVERS names one)
#   make bench   run the benchmark (BENCH_FLAGS="-rounds 3 -duration 3s")
#   make vet / make fmt

GO          ?= go
TEST_FLAGS  ?= -race -count=1 -p 1 -timeout 25m
BENCH_FLAGS ?=

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
	$(GO) run ./examples/mutex

bench: deps-demo
	$(GO) run ./examples/bench $(BENCH_FLAGS)
