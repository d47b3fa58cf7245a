#!/usr/bin/env bash
# push_once.sh — one full push (WORKLOADS workloads, SERVICES services) from the fake istiod to a
# fresh agent and map writer, measured without touching the agent while it applies (no dump
# polling, unlike xds_push.sh): push -> applied, the agent's receive -> applied, CPU seconds of
# the agent, map writer and fake istiod over the push, the agent's peak RSS. For profiling one
# step of the full-sync path against the previous one (docs/performance-plan.md's step table);
# not part of make bench. Options (environment):
#   WAIT=S      seconds to let the push run before reading (default 4; 25 at 1M)
#   DUMPS=N     then time N agent dumps (their cost on the agent's loop)
#   RSS_LOG=F   the agent's and map writer's RSS every 0.25 s during the push, into F
#   PERF_DIR=D  perf record the agent and the map writer for PERF_SECONDS (default 3) into D,
#               call graphs by PERF_CG (default fp; "dwarf" where frame pointers are omitted)
# Needs root.
set -uo pipefail
cd "$(dirname "$0")/.."
source tests/lib/mesh-env.sh
WORKLOADS=${WORKLOADS:-100000}
SERVICES=${SERVICES:-$((WORKLOADS / 10))}
trap km_env_cleanup EXIT
km_env_setup kmo$$ >/dev/null
km_make_pki
echo t >"$KM_DIR/token" && chmod 644 "$KM_DIR/token"
km_istiod_start
km_istiod send "{\"cmd\": \"prepare\", \"workloads\": $WORKLOADS, \"services\": $SERVICES, \"dump\": \"$KM_DIR/push.bin\"}" >/dev/null
json() { "$KM_PY" -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user + system, in 10 ms ticks
minflt() { awk '{print $10}' "/proc/$1/stat"; }      # minor page faults (fresh pages zeroed)
rss_mb() { awk "/^$2:/ {printf \"%.1f\", \$2 / 1024}" "/proc/$1/status" 2>/dev/null; }
km_map_writer_start --max-frontends $((WORKLOADS + SERVICES + 64)) --max-endpoints $((WORKLOADS + 64)) \
	--max-backends $((WORKLOADS + 64)) --max-services $((SERVICES + 64)) \
	--max-authz-addresses $((WORKLOADS + 64)) --log-level warn ${MW_FLAGS:-} || exit 1
km_agent_start_xds --log-level warn --xds-max-message $((1 << 30))
sleep 2
istiod=$(pgrep -f "fake_istiod.py --control $KM_DIR" | head -1)
a0=$(ticks "$KM_AGENT_PID") m0=$(ticks "$KM_MW_PID") i0=$(ticks "$istiod") f0=$(minflt "$KM_AGENT_PID")
if [ -n "${PERF_DIR:-}" ]; then
	mkdir -p "$PERF_DIR"
	perf record -F 2000 --call-graph "${PERF_CG:-fp}" -p "$KM_AGENT_PID" -o "$PERF_DIR/agent.data" -- sleep "${PERF_SECONDS:-3}" >/dev/null 2>&1 &
	perf_pids=$!
	perf record -F 2000 --call-graph "${PERF_CG:-fp}" -p "$KM_MW_PID" -o "$PERF_DIR/map-writer.data" -- sleep "${PERF_SECONDS:-3}" >/dev/null 2>&1 &
	perf_pids="$perf_pids $!"
	sleep 0.5
fi
if [ -n "${RSS_LOG:-}" ]; then
	for _ in $(seq 1 400); do
		echo "$(date +%s.%N | cut -c1-14) $(rss_mb "$KM_AGENT_PID" VmRSS) $(rss_mb "$KM_MW_PID" VmRSS)"
		sleep 0.25
	done >"$RSS_LOG" &
	rss_pid=$!
fi
t0=$(km_istiod send '{"cmd": "push-prepared"}' | json 'd["t0"]')
sleep "${WAIT:-4}"
[ -n "${PERF_DIR:-}" ] && wait $perf_pids
[ -n "${RSS_LOG:-}" ] && kill "$rss_pid" 2>/dev/null
a1=$(ticks "$KM_AGENT_PID") m1=$(ticks "$KM_MW_PID") i1=$(ticks "$istiod") f1=$(minflt "$KM_AGENT_PID")
dump=$(KM_DUMP_ITEMS=1 "$KM_TESTCTL" agent-dump --socket "$KM_DIR/run/xds-agent.sock")
echo "push -> applied $(echo "$dump" | json "round(d['map_writer']['last_synced_unix_us'] / 1e6 - $t0, 3)") s," \
	"agent receive -> applied $(echo "$dump" | json 'round(d["update_latency_us"]["max"] / 1e6, 3)') s," \
	"$(echo "$dump" | json 'd["model"]["workloads"]') workloads"
echo "CPU over the push: agent $(((a1 - a0) * 10)) ms, map writer $(((m1 - m0) * 10)) ms, fake istiod $(((i1 - i0) * 10)) ms"
echo "the agent's minor page faults over the push: $((f1 - f0))"
echo "agent peak RSS $(rss_mb "$KM_AGENT_PID" VmHWM) MB"
if [ -n "${DUMPS:-}" ]; then
	t1=$(date +%s%N)
	for _ in $(seq 1 "$DUMPS"); do
		KM_DUMP_ITEMS=1 "$KM_TESTCTL" agent-dump --socket "$KM_DIR/run/xds-agent.sock" >/dev/null
	done
	t2=$(date +%s%N) a2=$(ticks "$KM_AGENT_PID")
	echo "a dump: $(((t2 - t1) / DUMPS / 1000)) us (wall), $(((a2 - a1) * 10 / DUMPS)) ms of the agent's CPU"
fi
