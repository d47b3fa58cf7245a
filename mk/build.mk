# build.mk — the build rules proper (run through the top-level Makefile, which installs deps).
SHELL   := /bin/bash
B       := build
GEN     := $(B)/gen
CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
PROTOC_C ?= protoc-c

PKGS     := libbpf libuv libprotobuf-c jansson libnghttp2 wolfssl libcurl yaml-0.1 libnl-xfrm-3.0 \
            libmicrohttpd ldns libcares
# LAYOUT_FLAGS=-DKM_LAYOUT_TEST_NEXT builds the test's next table layout (see next-map-writer).
LAYOUT_FLAGS ?=
CPPFLAGS := -D_GNU_SOURCE -I. -Ibpf/include -I$(GEN) $(LAYOUT_FLAGS)
CFLAGS   := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-missing-field-initializers \
            -fno-strict-aliasing $(shell pkg-config --cflags $(PKGS))
# Each binary links only what it uses: the agent has no libbpf.
COMMON_LIBS := $(shell pkg-config --libs libuv libprotobuf-c)
MW_LIBS     := $(shell pkg-config --libs libbpf) -lelf -lz -lmnl $(COMMON_LIBS)
XDS_LIBS    := $(shell pkg-config --libs jansson libnghttp2 wolfssl libmicrohttpd libcares) $(COMMON_LIBS)
# the plugin is linked statically (fast start, any node's libraries): Debian ships these archives
PLUGIN_LIBS := -static -Wl,--gc-sections -l:libjansson.a -l:libprotobuf-c.a
CNI_LIBS    := $(shell pkg-config --libs jansson libcurl yaml-0.1) $(COMMON_LIBS)
CTL_LIBS    := $(shell pkg-config --libs jansson libcurl yaml-0.1) $(COMMON_LIBS)
IPSEC_LIBS  := $(shell pkg-config --libs jansson wolfssl libnl-xfrm-3.0 libcurl yaml-0.1) $(COMMON_LIBS)
# the tunnel's HBONE server is OpenSSL's (AES-NI; docs/decisions.md), its CA client wolfSSL's
TUNNEL_LIBS := $(shell pkg-config --libs jansson libnghttp2 wolfssl libssl libcrypto) $(COMMON_LIBS)
# ldns: the tests' own reader and writer of DNS messages, against the proxy's (dns_wire.c)
TEST_LIBS   := $(shell pkg-config --libs ldns)
LDLIBS      := $(MW_LIBS) $(XDS_LIBS) $(CNI_LIBS) $(IPSEC_LIBS) $(TUNNEL_LIBS) $(TEST_LIBS)
SANFLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

IPC_SRCS    := ipc/frame.c ipc/conn.c ipc/message.c ipc/message_send.c ipc/client_sync.c ipc/server.c \
               ipc/peer_link.c \
               ipc/pb_wire.c ipc/batch_wire.c $(GEN)/kmesh_ipc.pb-c.c
SHARED_SRCS := $(wildcard shared/*.c)
MW_SRCS     := $(filter-out %/main.c,$(wildcard services/map-writer/*.c))
WIRE_PROTOS := $(wildcard proto/*.proto)
WIRE_SRCS   := $(patsubst proto/%.proto,$(GEN)/%.pb-c.c,$(WIRE_PROTOS))
# TLS, HTTP/2 and gRPC to istiod (the xDS agent's, and issue 48's tunnel's); with workload keys
# and istiod's CA (the tunnel's alone)
ISTIOD_SRCS := shared/tls/tls_stream.c shared/tls/tls_wolfssl.c shared/tls/tls_conn.c \
               shared/tls/grpc_stream.c
TLS_SRCS    := $(wildcard shared/tls/*.c)
XDS_SRCS    := $(filter-out %/main.c,$(wildcard services/xds-agent/*.c services/xds-agent/*/*.c)) $(WIRE_SRCS) \
               $(ISTIOD_SRCS)
KUBE_SRCS   := $(filter-out %/kube_watch.c,$(wildcard shared/kube/*.c)) # the watch: daemons only
PLUGIN_SRCS := $(filter-out %/main.c,$(wildcard services/cni-plugin/*.c))
# ... and of the rest only what it uses: no libuv, no libcurl
PLUGIN_DEPS := ipc/frame.c ipc/message.c ipc/pb_wire.c ipc/batch_wire.c ipc/client_sync.c \
               $(GEN)/kmesh_ipc.pb-c.c shared/log.c \
               shared/netns.c shared/addr.c shared/atomic_file.c shared/errbuf.c shared/version.c \
               shared/kube_name.c
CNI_SRCS    := $(filter-out %/main.c,$(wildcard services/cni-agent/*.c)) $(PLUGIN_SRCS) $(KUBE_SRCS) \
               shared/kube/kube_watch.c
CTL_SRCS    := $(filter-out %/main.c,$(wildcard tools/kmeshctl/*.c))
IPSEC_SRCS  := $(filter-out %/main.c,$(wildcard services/ipsec-agent/*.c)) $(KUBE_SRCS) \
               shared/kube/kube_watch.c
TUNNEL_SRCS := $(filter-out %/main.c,$(wildcard services/tunnel/*.c)) $(TLS_SRCS) $(WIRE_SRCS)
COMMON_SRCS := $(IPC_SRCS) $(SHARED_SRCS)
DAEMON_SRCS := $(wildcard shared/daemon/*.c) # the daemons only: systemd notification (its protocol, spoken here)

GEN_HDRS := $(GEN)/kmesh_ipc.pb-c.h $(GEN)/kmesh.skel.h $(GEN)/map_count.skel.h $(WIRE_SRCS:.c=.h) $(GEN)/km_version.h

obj = $(patsubst %.c,$(B)/obj/%.o,$(patsubst $(B)/%,%,$(1)))
san = $(patsubst %.c,$(B)/san/%.o,$(patsubst $(B)/%,%,$(1)))

BINS := $(B)/bin/kmesh-map-writer $(B)/bin/kmesh-xds-agent $(B)/bin/kmesh-cni $(B)/bin/kmesh-cni-agent \
        $(B)/bin/kmesh-ipsec-agent $(B)/bin/kmesh-tunnel $(B)/bin/kmeshctl
TEST_TOOLS := $(B)/tests/kmesh-testctl $(B)/tests/kmesh-dumpload $(B)/tests/kmesh-certfetch \
	      $(B)/tests/kmesh-podsock
SAN_BINS := $(addprefix $(B)/san-bin/,kmesh-map-writer kmesh-xds-agent kmesh-cni kmesh-cni-agent \
	kmesh-ipsec-agent kmesh-tunnel)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/test_*.c))
FUZZERS := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))

.PHONY: all test test-build unit integration integration-cost integration-rest integration-san deploy-check demo dist fuzz fuzz-smoke fuzz-long bench \
	chaos chaos-quick soak security
.SECONDARY:
.DELETE_ON_ERROR:

all: $(BINS) $(TEST_TOOLS)

# ---- generated code ------------------------------------------------------------------------------
# The build's version, rewritten only when it changes (shared/version.c alone includes it): the
# chart's appVersion (which is also the image's default tag), then the commit as semver build
# metadata, e.g. 0.1.0+b60c682 or 0.1.0+b60c682-dirty.
$(GEN)/km_version.h: FORCE
	@mkdir -p $(@D)
	@a=$$(sed -n 's/^appVersion: *"*\([^"]*\)"*$$/\1/p' charts/kmesh/Chart.yaml); \
	v=$${a:-0.0.0}+$$(git describe --always --dirty 2>/dev/null || echo dev); \
	t=$@.$$$$.tmp; echo "#define KM_VERSION \"$$(printf %s "$$v" | tr -d '"\\')\"" > $$t; \
	cmp -s $$t $@ && rm -f $$t || mv $$t $@
.PHONY: FORCE
FORCE:

$(GEN)/vmlinux.h:
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(GEN)/kmesh_ipc.pb-c.c $(GEN)/kmesh_ipc.pb-c.h &: ipc/kmesh_ipc.proto
	@mkdir -p $(GEN)
	$(PROTOC_C) --proto_path=ipc --c_out=$(GEN) $<

$(GEN)/%.pb-c.c $(GEN)/%.pb-c.h: proto/%.proto
	@mkdir -p $(GEN)
	$(PROTOC_C) --proto_path=proto --c_out=$(GEN) $<

# ---- BPF objects and skeletons -------------------------------------------------------------------
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__KMESH_BPF__ -D__TARGET_ARCH_x86 -Wall -Werror \
              -I$(GEN) -Ibpf -Ibpf/include $(LAYOUT_FLAGS)

$(B)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/lib/*.h) bpf/include/kmesh_maps.h $(GEN)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# One entry file per hook family, statically linked into one object (maps are declared __weak in
# bpf/lib/maps.h and merged), so the map writer loads one skeleton.
BPF_ENTRIES := $(patsubst bpf/%.bpf.c,$(B)/bpf/%.bpf.o,$(wildcard bpf/*.bpf.c))
$(B)/bpf/kmesh.o: $(BPF_ENTRIES)
	$(BPFTOOL) gen object $@ $^

$(GEN)/kmesh.skel.h: $(B)/bpf/kmesh.o
	$(BPFTOOL) gen skeleton $< name kmesh > $@

# The map-count iterator is an object of its own: a kernel that cannot load it still loads the
# data plane (services/map-writer/map_count.h).
$(B)/bpf/count/%.bpf.o: bpf/count/%.bpf.c bpf/count/%.h $(GEN)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(GEN)/map_count.skel.h: $(B)/bpf/count/map_count.bpf.o
	$(BPFTOOL) gen skeleton $< name map_count > $@

# ---- C objects (normal and sanitized) ------------------------------------------------------------
$(B)/obj/%.o: %.c | $(GEN_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@
$(B)/obj/gen/%.o: $(GEN)/%.c | $(GEN_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-parameter -c $< -o $@
$(B)/san/%.o: %.c | $(GEN_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SANFLAGS) -MMD -MP -c $< -o $@
$(B)/san/gen/%.o: $(GEN)/%.c | $(GEN_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SANFLAGS) -Wno-unused-parameter -c $< -o $@

-include $(shell find $(B)/obj $(B)/san -name '*.d' 2>/dev/null)

# ---- binaries ------------------------------------------------------------------------------------
$(B)/bin/kmesh-map-writer: $(call obj,services/map-writer/main.c $(MW_SRCS) $(COMMON_SRCS) $(DAEMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(MW_LIBS)

$(B)/bin/kmesh-xds-agent: $(call obj,services/xds-agent/main.c $(XDS_SRCS) $(COMMON_SRCS) $(DAEMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(XDS_LIBS)

# kmesh-cni runs on the node, whose libraries may differ or be missing, and its start is on
# every pod's path: one static binary, with what it uses only.
$(B)/bin/kmesh-cni: $(call obj,services/cni-plugin/main.c $(PLUGIN_SRCS) $(PLUGIN_DEPS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(PLUGIN_LIBS)

$(B)/bin/kmesh-cni-agent: $(call obj,services/cni-agent/main.c $(CNI_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CNI_LIBS)

$(B)/bin/kmeshctl: $(call obj,tools/kmeshctl/main.c $(CTL_SRCS) $(KUBE_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CTL_LIBS)

$(B)/tests/kmesh-testctl: $(call obj,tests/tools/kmesh-testctl.c $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(COMMON_LIBS)

$(B)/tests/kmesh-dumpload: $(call obj,tests/tools/kmesh-dumpload.c $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(COMMON_LIBS)

$(B)/tests/kmesh-podsock: $(call obj,tests/tools/kmesh-podsock.c $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(COMMON_LIBS)

$(B)/tests/kmesh-certfetch: $(call obj,tests/tools/kmesh-certfetch.c $(TLS_SRCS) $(WIRE_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(XDS_LIBS)

# ---- the daemons under ASan+UBSan, for the integration tests (make integration-san) ---------
$(B)/san-bin/kmesh-map-writer: $(call san,services/map-writer/main.c $(MW_SRCS) $(COMMON_SRCS) $(DAEMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(MW_LIBS)

$(B)/bin/kmesh-ipsec-agent: $(call obj,services/ipsec-agent/main.c $(IPSEC_SRCS) $(COMMON_SRCS) $(DAEMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(IPSEC_LIBS)

$(B)/san-bin/kmesh-ipsec-agent: $(call san,services/ipsec-agent/main.c $(IPSEC_SRCS) $(COMMON_SRCS) $(DAEMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(IPSEC_LIBS)

$(B)/bin/kmesh-tunnel: $(call obj,services/tunnel/main.c $(TUNNEL_SRCS) $(COMMON_SRCS) $(DAEMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(TUNNEL_LIBS)

$(B)/san-bin/kmesh-tunnel: $(call san,services/tunnel/main.c $(TUNNEL_SRCS) $(COMMON_SRCS) $(DAEMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(TUNNEL_LIBS)

$(B)/san-bin/kmesh-xds-agent: $(call san,services/xds-agent/main.c $(XDS_SRCS) $(COMMON_SRCS) $(DAEMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(XDS_LIBS)

# the sanitizers need the dynamic runtime: the sanitized plugin is linked dynamically
$(B)/san-bin/kmesh-cni: $(call san,services/cni-plugin/main.c $(PLUGIN_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(CNI_LIBS)

$(B)/san-bin/kmesh-cni-agent: $(call san,services/cni-agent/main.c $(CNI_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(CNI_LIBS)

# ---- unit tests (cmocka, always under ASan+UBSan) ------------------------------------------------
# every module a unit test may use, sanitized, in one archive: each test links only the objects it
# needs (linking all of them into each of ~45 tests took ~2.5 s apiece, half of make test's build)
UNIT_LIB_SRCS := $(sort $(XDS_SRCS) $(MW_SRCS) $(CNI_SRCS) $(IPSEC_SRCS) $(DAEMON_SRCS) $(CTL_SRCS) \
		   $(TUNNEL_SRCS) $(COMMON_SRCS))
$(B)/san/libunit.a: $(call san,$(UNIT_LIB_SRCS))
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(B)/tests/test_%: $(call san,tests/unit/test_%.c) $(B)/san/libunit.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

unit: $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do \
		echo "== $$t"; \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 $$t; \
	done

# A map writer (and its BPF object) with the test's next table layout, in its own build tree:
# tests/integration/upgrade_test.sh upgrades a running data plane to it.
.PHONY: next-map-writer
next-map-writer:
	@$(MAKE) --no-print-directory -f mk/build.mk B=$(B)/next LAYOUT_FLAGS=-DKM_LAYOUT_TEST_NEXT \
		$(B)/next/bin/kmesh-map-writer

# what the integration tests run besides the daemons: the next layout's map writer, the benches
INTEGRATION_TOOLS := next-map-writer $(addprefix $(B)/bench/,connect_bench authz_bench decode_bench \
	table_ops_bench cni_add_bench passive_bench)
integration: all $(INTEGRATION_TOOLS)
	@bash tests/integration/run.sh

# make test's split of it: the cost tests alone (their ceilings are CPU ratios), then the rest
integration-cost: all $(INTEGRATION_TOOLS)
	@bash tests/integration/run.sh --cost

integration-rest: all $(INTEGRATION_TOOLS)
	@bash tests/integration/run.sh --no-cost

integration-san: all $(INTEGRATION_TOOLS) $(SAN_BINS)
	@bash tests/integration/run.sh --sanitized

# the Helm chart (a real helm) and the systemd units (systemd-analyze), with the real binaries
deploy-check: all
	@set -e; for t in tests/deploy/*_test.sh; do echo "== $$t"; bash $$t; done

# faults under steady traffic (tests/chaos/chaos.sh): `make chaos`, and a subset in make test
chaos: all
	@bash tests/chaos/chaos.sh

chaos-quick: all
	@echo "== tests/chaos/chaos.sh --quick"; bash tests/chaos/chaos.sh --quick

# churn of workloads and connections, with growth checks (tests/soak/soak.sh)
soak: all
	@bash tests/soak/soak.sh

# attacks by local processes on the daemons' sockets (tests/security/; docs/security.md)
security: all
	@set -e; for t in tests/security/*_test.sh; do echo "== $$t"; bash $$t; done

# Everything the test phases run, built first: the top Makefile builds it in parallel (-j, one
# job per core), then the phases run one at a time, each timed (their checks measure CPU time
# against same-run baselines and must not share the machine with a compiler or each other).
# Phases joined by "+" run together, each output kept apart and shown after: fuzzing (bounded
# in time, not in work) and the deploy checks measure nothing, so they may share the machine;
# nor do the integration tests once the cost tests have run alone, and the sanitized run (which
# skips those) spends most of its time waiting on the same kinds of events: the two runs take
# the time of one. The attacks and the quick chaos rounds measure bounds and outcomes, not CPU
# (the one check that reads CPU, dump_stall, runs its attacker at nice 10), and mostly wait: run
# together they took 119 s and 106 s, as each alone (2026-11-29).
test-build: all $(INTEGRATION_TOOLS) $(SAN_BINS) $(UNIT_TESTS) $(FUZZERS)

TEST_PHASES := unit fuzz-smoke+deploy-check integration-cost integration-rest+integration-san \
	       security+chaos-quick
test:
	@set -e; t0=$$(date +%s); for p in $(TEST_PHASES); do s=$$(date +%s); \
		if [ "$${p#*+}" = "$$p" ]; then \
			$(MAKE) --no-print-directory -f mk/build.mk $$p; \
		else \
			pids=; for q in $${p//+/ }; do \
				$(MAKE) --no-print-directory -f mk/build.mk $$q >$(B)/phase-$$q.log 2>&1 & \
				pids="$$pids $$!"; \
			done; rc=0; for pid in $$pids; do wait $$pid || rc=1; done; \
			for q in $${p//+/ }; do cat $(B)/phase-$$q.log; done; [ $$rc = 0 ]; \
		fi; \
		echo "== make $$p took $$(( $$(date +%s) - s )) s"; \
	done; echo "== make test's phases took $$(( $$(date +%s) - t0 )) s"

demo: all
	@bash demo/run.sh

dist: all
	@bash mk/dist.sh

# ---- benchmarks (bench/*.sh print markdown; make bench writes docs/performance.md) ------------
$(B)/bench/decode_bench: $(call obj,bench/decode_bench.c $(XDS_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(XDS_LIBS)

$(B)/bench/dns_names_bench: $(call obj,bench/dns_names_bench.c $(XDS_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(XDS_LIBS)

$(B)/bench/big_service_bench: $(call obj,bench/big_service_bench.c bench/lib/bench_util.c $(XDS_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(XDS_LIBS) -lbpf

$(B)/bench/tls_cipher_bench: $(call obj,bench/tls_cipher_bench.c)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ -lwolfssl -lcrypto

$(B)/bench/hbone_client_bench: $(call obj,bench/hbone_client_bench.c)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ -lnghttp2 -lssl -lcrypto

$(B)/bench/map_update_bench: $(call obj,bench/map_update_bench.c shared/latency.c)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(MW_LIBS)

$(B)/bench/table_ops_bench: $(call obj,bench/table_ops_bench.c $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(MW_LIBS)

# the reference connect4 program (the floor) the connect benchmark measures beside the shipped ones
$(B)/bench/ref/ref_connect.bpf.o: bench/ref/ref_connect.bpf.c bench/ref/ref_connect.h $(GEN)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -Ibench/ref -c $< -o $@

$(GEN)/ref_connect.skel.h: $(B)/bench/ref/ref_connect.bpf.o
	$(BPFTOOL) gen skeleton $< name ref_connect > $@

# the reference sk_lookup and close report (floors of the passive side and of monitoring)
$(B)/bench/ref/ref_accept.bpf.o: bench/ref/ref_accept.bpf.c bench/ref/ref_accept.h $(GEN)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -Ibench/ref -c $< -o $@

$(GEN)/ref_accept.skel.h: $(B)/bench/ref/ref_accept.bpf.o
	$(BPFTOOL) gen skeleton $< name ref_accept > $@

$(call obj,bench/connect_bench.c): $(GEN)/ref_connect.skel.h $(GEN)/ref_accept.skel.h
$(call obj,bench/passive_bench.c bench/lib/ref_close.c): $(GEN)/ref_accept.skel.h
$(B)/bench/connect_bench: $(call obj,bench/connect_bench.c bench/lib/bench_util.c bench/lib/ref_close.c)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(MW_LIBS) -lpthread

$(B)/bench/passive_bench: $(call obj,bench/passive_bench.c bench/lib/bench_util.c bench/lib/ref_close.c)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(MW_LIBS)

$(B)/bench/cni_add_bench: $(call obj,bench/cni_add_bench.c)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^

$(B)/bench/authz_bench: $(call obj,bench/authz_bench.c $(XDS_SRCS) $(MW_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(MW_LIBS) $(XDS_LIBS)

BENCHES := $(addprefix $(B)/bench/,decode_bench map_update_bench table_ops_bench connect_bench \
	cni_add_bench authz_bench passive_bench big_service_bench tls_cipher_bench dns_names_bench \
	hbone_client_bench)
bench: all $(BENCHES)
	@bash bench/run.sh

# ---- fuzzing (clang libFuzzer) -------------------------------------------------------------------
FUZZ_COMMON := -g -O1 -fno-sanitize-recover=undefined $(CPPFLAGS) $(shell pkg-config --cflags $(PKGS)) \
               -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
FUZZ_CFLAGS := -fsanitize=fuzzer,address,undefined $(FUZZ_COMMON)
FUZZ_SECONDS ?= 20

# The sources are compiled once, instrumented for every target (fuzzer-no-link: coverage without
# libFuzzer's main), and each target links its own entry file with them: eleven targets each
# compiling the whole tree took ~7 of make test's minutes.
fuzzo = $(patsubst %.c,$(B)/fuzz-obj/%.o,$(patsubst $(B)/%,%,$(1)))
$(B)/fuzz-obj/%.o: %.c | $(GEN_HDRS)
	@mkdir -p $(@D)
	$(CLANG) -fsanitize=fuzzer-no-link,address,undefined $(FUZZ_COMMON) -MMD -MP -c $< -o $@
$(B)/fuzz-obj/gen/%.o: $(GEN)/%.c | $(GEN_HDRS)
	@mkdir -p $(@D)
	$(CLANG) -fsanitize=fuzzer-no-link,address,undefined $(FUZZ_COMMON) -c $< -o $@
-include $(shell find $(B)/fuzz-obj -name '*.d' 2>/dev/null)

# ... from one archive: each target takes only the objects it needs (its link ~2x faster). The
# archive holds the parsers and what they call, not the daemons' loops, servers and links (half
# the tree, which no target reached: a clean build compiled it for nothing); a target that comes
# to need more fails to link, naming the symbol.
FUZZ_LIB_SRCS := $(sort $(wildcard services/xds-agent/authz/*.c services/xds-agent/core/*.c \
			services/xds-agent/model/*.c services/xds-agent/sources/*.c) \
		   $(addprefix services/xds-agent/ads/,address_wire.c resource_pb.c response_view.c \
			xds_apply.c demand.c) \
		   $(addprefix services/xds-agent/dns/,dns_answer.c dns_names.c dns_wire.c) \
		   services/cni-plugin/netconf.c services/cni-plugin/cni_output.c \
		   services/cni-agent/conflist.c \
		   $(addprefix services/ipsec-agent/,keyfile.c node_info.c node_spec.c) \
		   $(KUBE_SRCS) shared/kube/kube_watch.c \
		   ipc/frame.c ipc/message.c ipc/pb_wire.c ipc/batch_wire.c $(GEN)/kmesh_ipc.pb-c.c \
		   $(WIRE_SRCS) $(addprefix shared/,addr.c atomic_file.c base64.c errbuf.c grow.c log.c) \
		   services/xds-agent/telemetry/baggage.c \
		   services/tunnel/hbone_server.c services/tunnel/h2_relay.c services/tunnel/turn_queue.c shared/tls/tls_stream.c \
		   services/tunnel/hbone_client.c services/tunnel/client_tls.c services/tunnel/server_tls.c \
		   services/tunnel/tls_openssl.c)
$(B)/fuzz-obj/libfuzz.a: $(call fuzzo,$(FUZZ_LIB_SRCS))
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(B)/fuzz/fuzz_%: $(call fuzzo,tests/fuzz/fuzz_%.c) $(B)/fuzz-obj/libfuzz.a
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -o $@ $^ $(LDLIBS)

# make test runs each target briefly (3 s) so they keep building and a shallow crash shows at once.
fuzz-smoke:
	@$(MAKE) --no-print-directory -f mk/build.mk fuzz FUZZ_SECONDS=3

# the campaign: a fixed number of executions per target, finds merged into tests/fuzz/corpus
fuzz-long: $(FUZZERS)
	@bash tests/fuzz/long.sh

fuzz: $(FUZZERS)
	@bash tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZERS)
