# Makefile — the one entry point. Each target first makes sure the Debian packages it needs are
# installed (mk/deps.sh), then runs the real rules in mk/build.mk.
#   make            build everything into build/ (binaries in build/bin/)
#   make test       unit tests (ASan+UBSan), fuzz smoke, the integration tests (root) with the
#                   daemons as shipped and again under ASan+UBSan, and chaos --quick
#   make demo       the mesh end to end on one machine, from demo/mesh.json
#   make fuzz       every libFuzzer target for a bounded time
#   make fuzz-long  the fuzz campaign: FUZZ_RUNS (10M) executions per target; docs/fuzzing.md
#   make bench      the benchmarks; rewrites docs/performance.md
#   make chaos      faults under steady traffic (10 min at most): kills, istiod flaps, CNI
#                   conflist rewrites, IPsec key rotation, a full table; counts failures
#   make soak       churn of workloads and connections (SOAK_MINUTES, 30 at most); growth checks
#   make deps       install the Debian packages
#   make dist       a self-contained release tarball (build/dist/: binaries with their own loader
#                   and libraries, kubectl-kmesh, the chart, the units)
#   make install    build, then install the binaries and the systemd units (mk/install.mk:
#                   PREFIX=/usr/local, DESTDIR=; docs/install-vm.md)
#   make uninstall  remove what make install installed (not /etc/kmesh)
#   make clean

BUILD_MK := $(MAKE) --no-print-directory -f mk/build.mk

.PHONY: all deps test unit integration demo fuzz fuzz-long bench chaos soak dist install uninstall clean
all: deps
	@$(BUILD_MK) all

deps:
	@./mk/deps.sh

# the build in parallel (one job per core), then the test phases one at a time
test: deps
	@s=$$(date +%s); $(BUILD_MK) -j$$(nproc) test-build && \
		echo "== make test's build took $$(( $$(date +%s) - s )) s"
	@$(BUILD_MK) test

unit: deps
	@$(BUILD_MK) unit

integration: deps
	@$(BUILD_MK) integration

demo: deps
	@$(BUILD_MK) demo

dist: deps
	@$(BUILD_MK) dist

fuzz: deps
	@$(BUILD_MK) fuzz

bench: deps
	@$(BUILD_MK) bench

fuzz-long: deps
	@$(BUILD_MK) fuzz-long

chaos: deps
	@$(BUILD_MK) chaos

soak: deps
	@$(BUILD_MK) soak

install: all
	@$(MAKE) --no-print-directory -f mk/install.mk install

uninstall:
	@$(MAKE) --no-print-directory -f mk/install.mk uninstall

clean:
	rm -rf build
