# Top-level entry points. Each target is a thin wrapper: the work lives in scripts/ and Go commands.
# Targets that need p4c, BMv2, Mininet or root print one line beginning "SKIP:" and succeed when
# what they need is missing.

GO       ?= go
BUILD    ?= build
# Which switch runs the pipeline: auto (BMv2 where installed, else the reference switch), bmv2, ref.
SWITCH   ?= auto
export SWITCH BUILD

.PHONY: all build test demo p4 p4-tna ptf bench bench-placement evaluation run stop clean

all: build

build:
	@mkdir -p $(BUILD)/bin
	$(GO) build -o $(BUILD)/bin/ ./cmd/...

# The README's test command.
test:
	$(GO) vet ./...
	$(GO) test ./...

demo: build
	@scripts/demo.sh

p4:
	@scripts/p4.sh v1model

p4-tna:
	@scripts/p4.sh tna

ptf: build
	@scripts/ptf.sh

bench: build
	@scripts/bench.sh

bench-placement:
	$(GO) run ./cmd/netpack bench

evaluation: build
	@scripts/evaluation.sh

run: build
	@scripts/run.sh

stop:
	@scripts/stop.sh

clean:
	rm -rf $(BUILD)
