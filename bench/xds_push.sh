#!/usr/bin/env bash
# xds_push.sh — istiod pushes WORKLOADS workloads and SERVICES services in one Delta xDS response
# (fake istiod, TLS) to a fresh xDS agent; measured: push -> every table row applied in the map
# writer, the agent's own receive -> applied time, the agent's and the map writer's peak RSS,
# and then single-workload changes (one per response) received -> applied, p50/p99. Baseline in
# the same run: decoding the very same bytes (bench/decode_bench). Prints a markdown section.
set -uo pipefail
cd "$(dirname "$0")/.."
source tests/lib/mesh-env.sh
WORKLOADS=${WORKLOADS:-100000}
SERVICES=${SERVICES:-10000}
REPS=${REPS:-3}
FLAPS=${FLAPS:-1000}

trap km_env_cleanup EXIT
km_env_setup kmb$$ >/dev/null
km_make_pki
echo t >"$KM_DIR/token" && chmod 644 "$KM_DIR/token"
km_istiod_start
prep=$(km_istiod send "{\"cmd\": \"prepare\", \"workloads\": $WORKLOADS, \"services\": $SERVICES, \"dump\": \"$KM_DIR/push.bin\"}")
bytes=$(echo "$prep" | "$KM_PY" -c 'import json,sys; print(json.load(sys.stdin)["bytes"])')
decode=$(build/bench/decode_bench "$KM_DIR/push.bin" 5)

json() { "$KM_PY" -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
hwm_mb() { awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
wait_for() { # wait_for EXPR SECONDS [INTERVAL]: poll the agent's dump (short lists)
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(KM_DUMP_ITEMS=1 km_agent_json "$1" 2>/dev/null)" = true ] && return 0
		sleep "${3:-0.02}"
	done
	echo "timed out: $1" >&2; km_agent_json "d[\"update_latency_us\"]" >&2; tail -3 "$KM_DIR/istiod.log" >&2
	return 1
}

e2e=() internal=() agent_rss=() mw_rss=() p50=() p99=()
for rep in $(seq 1 "$REPS"); do
	km_istiod send '{"cmd": "set", "resources": []}' >/dev/null
	rm -f "$KM_DIR/map-writer.log" "$KM_DIR/xds-agent.log"
	km_map_writer_start --max-frontends 524288 --max-endpoints 262144 --max-backends 262144 \
		--max-services 65536 || exit 1
	km_agent_start_xds
	wait_for 'd["istiod"]["connected"] and d["istiod"]["address"]["synced"]' 10 || exit 1
	t0=$(km_istiod send '{"cmd": "push-prepared"}' | json 'd["t0"]')
	wait_for "d['update_latency_us']['count'] >= 1 and d['model']['workloads'] == $WORKLOADS" 60 || exit 1
	dump=$(KM_DUMP_ITEMS=1 "$KM_TESTCTL" agent-dump --socket "$KM_DIR/run/xds-agent.sock")
	e2e+=("$(echo "$dump" | json "round(d['map_writer']['last_synced_unix_us'] / 1e6 - $t0, 3)")")
	internal+=("$(echo "$dump" | json 'round(d["update_latency_us"]["max"] / 1e6, 3)')")
	agent_rss+=("$(hwm_mb "$KM_AGENT_PID")")
	mw_rss+=("$(hwm_mb "$KM_MW_PID")")
	# the dump runs on the agent's loop: do not poll while the changes are being measured
	km_istiod send "{\"cmd\": \"flap\", \"count\": $FLAPS, \"interval_ms\": 3}" >/dev/null
	sleep "$(awk -v n="$FLAPS" 'BEGIN {print n * 0.0035 + 0.2}')"
	wait_for "d['update_latency_us']['count'] >= $((FLAPS + 1))" 60 0.5 || exit 1
	dump=$(KM_DUMP_ITEMS=1 "$KM_TESTCTL" agent-dump --socket "$KM_DIR/run/xds-agent.sock")
	p50+=("$(echo "$dump" | json 'round(d["update_latency_us"]["p50"] / 1000, 3)')")
	p99+=("$(echo "$dump" | json 'round(d["update_latency_us"]["p99"] / 1000, 3)')")
	kill -TERM "$KM_AGENT_PID" "$KM_MW_PID"
	wait "$KM_AGENT_PID" "$KM_MW_PID" 2>/dev/null
done

stats() { # stats VALUES...: "min | median | max"
	printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {printf "%s | %s | %s", v[1], v[int((NR + 1) / 2)], v[NR]}'
}
dec_ms=$(echo "$decode" | json 'd["decode_ms"][1]')
mod_ms=$(echo "$decode" | json 'd["decode_model_ms"][1]')
e2e_med=$(printf '%s\n' "${e2e[@]}" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
cat <<MD
## xDS push: $WORKLOADS workloads and $SERVICES services in one response

Command: \`make bench\` (runs \`bench/xds_push.sh\`; \`WORKLOADS\`, \`SERVICES\`, \`REPS=$REPS\`,
\`FLAPS=$FLAPS\` override). Fake istiod (python3-grpcio, TLS 1.3) on loopback; one response of
$bytes bytes; a fresh map writer and xDS agent (uid 65534) for each repetition.

| figure | min | median | max | goal |
|---|---|---|---|---|
| push sent -> every row applied in the map writer (s) | $(stats "${e2e[@]}") | <= 1 s |
| agent: response received -> every row applied (s) | $(stats "${internal[@]}") | |
| xDS agent peak RSS (MB) | $(stats "${agent_rss[@]}") | <= 64 MB |
| map writer peak RSS (MB) | $(stats "${mw_rss[@]}") | |
| one workload change, received -> applied, p50 (ms) | $(stats "${p50[@]}") | |
| one workload change, received -> applied, p99 (ms) | $(stats "${p99[@]}") | <= 2 ms |

Baseline measured in the same run on the same bytes (\`build/bench/decode_bench\`, 5 runs,
min/median/max): decoding and validating every resource $(echo "$decode" | json '" / ".join("%.1f" % x for x in d["decode_ms"])') ms;
decoding plus building the model and its $(echo "$decode" | json 'd["ops"]') table operations
$(echo "$decode" | json '" / ".join("%.1f" % x for x in d["decode_model_ms"])') ms; the model then holds
$(echo "$decode" | json '"%.1f MB of heap (%d bytes per resource)" % (d["model_bytes"] / 1048576, d["model_bytes"] / d["resources"])').
Ratio, median push-to-applied over median decode: **$(awk -v a="$e2e_med" -v b="$dec_ms" 'BEGIN {printf "%.1f", a * 1000 / b}')x**
(over decode plus model: $(awk -v a="$e2e_med" -v b="$mod_ms" 'BEGIN {printf "%.1f", a * 1000 / b}')x).
MD
