# Top-level entry points. Each target is a thin wrapper: the work lives in scripts/ and Go commands.
# Targets that need p4c, BMv2, Mininet or root print one line beginning "SKIP:" and succeed when
# what they need is missing, except demo, run, train-demo and torch-demo, which fail with a
# message (before building).

GO       ?= go
BUILD    ?= build
# Which switch runs the pipeline: auto (BMv2 where installed, else the reference switch), bmv2, ref.
SWITCH   ?= auto
export SWITCH BUILD GO
# ip, sysctl and Mininet's tools live in sbin, which a sudo user's PATH (sudo env "PATH=$PATH") lacks.
export PATH := $(PATH):/usr/local/sbin:/usr/sbin:/sbin

.PHONY: all build test kube-test k8s-demo demo p4 p4-tna ptf bench bench-placement evaluation run stop clean cluster-demo pylib train-demo torch-demo bench-python bench-torch validate chaos

all: build

build:
	@mkdir -p $(BUILD)/bin
	$(GO) build -o $(BUILD)/bin/ ./cmd/...

# The README's test command: uncached (a skip cached before BMv2 or Mininet was installed would
# hide the new runs), one line per package, then every skipped test with its reason, every failure
# with its output, and the totals.
test:
	$(GO) vet ./...
	$(GO) tool gotestsum --format pkgname --format-hide-empty-pkg -- -count=1 ./...

# The Kubernetes module (kube/, a go.mod of its own so that make test stays light): the NetPack
# scheduler plugin, the extender, the operator and the node runner, tested against an etcd,
# kube-apiserver and kube-scheduler started in process (the end-to-end test needs root). No go vet:
# its analysis of Kubernetes' whole tree takes longer than the build.
# KUBE_RUN / KUBE_SKIP select tests (go test -run / -skip).
KUBE_RUN  ?=
KUBE_SKIP ?=
kube-test: build
	cd kube && INAPACK_BIN=$(abspath $(BUILD)/bin) $(GO) test -vet=off -count=1 -timeout 30m $(if $(KUBE_RUN),-run '$(KUBE_RUN)') $(if $(KUBE_SKIP),-skip '$(KUBE_SKIP)') ./...

# Training gangs through kube-scheduler with the NetPack plugin, the operator and the switch
# controller on an emulated cluster: each gang's placement, JCT and exactness, the last a torchrun
# job under backend "inapack" (build/pyenv's torch, scripts/pyenv.sh) (root; SWITCH=bmv2).
k8s-demo: build pylib
	@cd kube && $(GO) test -vet=off -c -o $(abspath $(BUILD))/kube-e2e.test ./e2e && cd e2e && \
	  INAPACK_BIN=$(abspath $(BUILD)/bin) INAPACK_LIB=$(abspath $(BUILD)/lib/libinapack.so) $(abspath $(BUILD))/kube-e2e.test -test.run 'TestKubernetesEndToEnd$$' -test.timeout 15m \
	  -demo -switch $(if $(filter bmv2,$(SWITCH)),bmv2,ref) 2>$(abspath $(BUILD))/k8s-demo.log \
	  || { echo "k8s-demo: FAIL (the components' logs: $(BUILD)/k8s-demo.log)"; exit 1; }

demo:
	@scripts/demo.sh

# A short trace through the scheduler service on an emulated two-rack cluster, NetPack vs a
# baseline, JCTs beside the simulator's (root; SWITCH=bmv2 for BMv2, else the reference switch).
cluster-demo: build
	@$(BUILD)/bin/ina-cluster demo --bin $(BUILD)/bin --dir $(BUILD)/cluster-demo $(if $(filter bmv2,$(SWITCH)),--work 0.2 --timeout 15m)

# The Python package's library, for a checkout (python/inapack finds build/lib/libinapack.so;
# pip install ./python builds its own copy).
pylib:
	@command -v $(GO) >/dev/null || { echo "pylib: $(GO) not found: Go builds libinapack.so (see go.mod for the version)"; exit 1; }
	$(GO) build -buildmode=c-shared -o $(BUILD)/lib/libinapack.so ./worker/cabi

# Training through the switch vs an exact local all-reduce, with faults and preemption (root).
train-demo:
	@scripts/train-demo.sh

# PyTorch DDP under torchrun, one process per emulated host, backend "inapack" through the
# reference switch (clean, faults, preemption) and BMv2 where installed, against gloo's loss (root).
torch-demo:
	@scripts/torch-demo.sh

# all_reduce of 1, 16 and 64 MiB: backend "inapack" through the reference switch vs gloo (root).
bench-torch:
	@scripts/torch-demo.sh bench

# All-reduce time per MiB from Python vs from Go, same run (python -m inapack.bench).
bench-python: pylib
	@PYTHONPATH=python INAPACK_LIB=$(BUILD)/lib/libinapack.so "$$(scripts/pyenv.sh)" -m inapack.bench

# Job mixes on fixed placements through the scheduler on an emulated cluster: measured throughput
# and JCT against NetPack's estimator and the simulator (root; docs/validation.md). MIXES per switch
# setting (3 settings; default 8); DOC= (empty) leaves the report unwritten.
# BMv2 forwards an order of magnitude slower: its jobs do a quarter of the iterations (WORK).
MIXES ?= 8
DOC   ?= docs/validation$(if $(filter bmv2,$(SWITCH)),-bmv2).md
WORK  ?= $(if $(filter bmv2,$(SWITCH)),0.25,1)
validate: build
	@$(BUILD)/bin/ina-cluster validate --bin $(BUILD)/bin --dir $(BUILD)/validate --mixes $(MIXES) --work $(WORK) $(if $(DOC),--doc $(DOC))

# Faults at seeded random times while a trace of jobs runs through the scheduler on an emulated
# cluster; each job's end checked against the promise of docs/faults.md, nothing leaked (root).
FAULTS ?= 110
SEED   ?= 1
chaos: build
	@$(BUILD)/bin/ina-cluster chaos --bin $(BUILD)/bin --dir $(BUILD)/chaos --faults $(FAULTS) --seed $(SEED)

p4:
	@scripts/p4.sh v1model

# TOFINO=tofino2 builds the TNA program for Tofino 2 (build/t2na).
TOFINO ?= tofino
p4-tna:
	@scripts/p4.sh tna $(TOFINO)

ptf: build
	@scripts/ptf.sh

bench: build
	@scripts/bench.sh

bench-placement:
	$(GO) run ./cmd/netpack bench

evaluation: build
	@scripts/evaluation.sh

run:
	@scripts/run.sh

stop:
	@scripts/stop.sh

clean:
	rm -rf $(BUILD)
