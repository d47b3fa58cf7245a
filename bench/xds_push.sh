#!/usr/bin/env bash
# xds_push.sh — istiod pushes WORKLOADS workloads and SERVICES services in one Delta xDS response
# (fake istiod, TLS) to a fresh xDS agent; measured: push -> every table row applied in the map
# writer, the agent's own receive -> applied time, the agent's and the map writer's peak RSS,
# and then single-workload changes (one per response) received -> applied, p50/p99. Baseline in
# the same run: decoding the very same bytes (bench/decode_bench), and the raw bpf() batch
# insert rate into maps like the map writer's (bench/table_ops_bench). Also: the routing
# tables' kernel memory per row once full. Runs once per scale in PUSH_SCALES (default
# 10000:1000 100000:10000 1000000:100000, workloads:services; WORKLOADS=N SERVICES=M runs only
# that one), then again with one authorization policy in force (every workload address's
# identity row is then written too; without a policy none is) at PUSH_POLICY_SCALES (default
# 100000:10000; POLICY=1 for one scale's run), then with the map writer's tables preallocated
# (--preallocate-tables, the documented trade: decisions.md) at PUSH_PREALLOC_SCALES (default
# 100000:10000; MW_FLAGS=... adds map writer flags to one scale's run), then sums the scales up.
# Prints markdown.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${WORKLOADS:-}" ]; then
	rows=() failed=0
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
	for scale in ${PUSH_SCALES:-10000:1000 100000:10000 1000000:100000}; do
		if WORKLOADS=${scale%:*} SERVICES=${scale#*:} bash bench/xds_push.sh >"$out"; then
			rows+=("| $(sed -n 's/^<!-- summary: \(.*\) -->$/\1/p' "$out")")
		else # one scale failing does not lose the others
			rows+=("| ${scale%:*} | ${scale#*:} | failed: see the log of \`make bench\` | | | | | | | |")
			failed=1
		fi
		cat "$out"
		echo
	done
	for scale in ${PUSH_POLICY_SCALES-100000:10000}; do # identity rows: written once a policy exists
		if POLICY=1 WORKLOADS=${scale%:*} SERVICES=${scale#*:} bash bench/xds_push.sh >"$out"; then
			rows+=("| $(sed -n 's/^<!-- summary: \(.*\) -->$/\1/p' "$out")")
		else
			rows+=("| ${scale%:*} (one policy) | ${scale#*:} | failed: see the log of \`make bench\` | | | | | | | |")
			failed=1
		fi
		cat "$out"
		echo
	done
	for scale in ${PUSH_PREALLOC_SCALES-100000:10000}; do
		if MW_FLAGS=--preallocate-tables WORKLOADS=${scale%:*} SERVICES=${scale#*:} \
			bash bench/xds_push.sh >"$out"; then
			rows+=("| $(sed -n 's/^<!-- summary: \(.*\) -->$/\1/p' "$out")")
		else
			rows+=("| ${scale%:*} (--preallocate-tables) | ${scale#*:} | failed: see the log of \`make bench\` | | | | | | | |")
			failed=1
		fi
		cat "$out"
		echo
	done
	echo "## Full sync by scale: summary"
	echo
	echo "From the sections above (medians; each scale a fresh fake istiod, map writer and agent)."
	echo "Every row sends the whole mesh to the node (the agent's default mode; a node on demand,"
	echo "\`--xds-on-demand\`, is measured by bench/xds_ondemand.sh)."
	echo "The map writer's tables are on demand (the default) unless the row says --preallocate-tables."
	echo "Ops/s = the table operations of the push over push -> applied; raw = BPF_MAP_UPDATE_BATCH"
	echo "of the same rows into maps of the same type and size, measured in the same run."
	echo
	echo "| workloads | services | push -> applied (s) | ops | ops/s | raw bpf() batch ops/s | ratio | xDS agent peak RSS (MB) | map writer peak RSS (MB) | kernel bytes per row |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "Goals (issue 26): 100k workloads + 10k services applied in <= 0.5 s with the agent <= 48 MB (ztunnel, user space only, takes about 0.7 s and 300 MB at that scale); 1M + 100k in <= 5 s with the agent <= 400 MB (ztunnel: ~7 s, ~3 GB); ops/s at least 0.7x the raw bpf() batch rate."
	exit $failed
fi
source tests/lib/mesh-env.sh
SERVICES=${SERVICES:-$((WORKLOADS / 10))}
REPS=${REPS:-3}
FLAPS=${FLAPS:-1000}
WAIT=$((60 + WORKLOADS / 5000)) # seconds a push may take before the run gives up

trap km_env_cleanup EXIT
km_env_setup kmb$$ >/dev/null
km_make_pki
echo t >"$KM_DIR/token" && chmod 644 "$KM_DIR/token"
km_istiod_start
prep=$(km_istiod send "{\"cmd\": \"prepare\", \"workloads\": $WORKLOADS, \"services\": $SERVICES, \"dump\": \"$KM_DIR/push.bin\"}")
bytes=$(echo "$prep" | "$KM_PY" -c 'import json,sys; print(json.load(sys.stdin)["bytes"])')
decode=$(build/bench/decode_bench "$KM_DIR/push.bin" 5)
# sizes for this scale: every workload is a frontend (its address), an endpoint and a backend
FLAGS=(--max-frontends $((WORKLOADS + SERVICES + 64)) --max-endpoints $((WORKLOADS + 64))
	--max-backends $((WORKLOADS + 64)) --max-services $((SERVICES + 64))
	--max-authz-addresses $((WORKLOADS + 64)) --log-level warn ${MW_FLAGS:-})
label=$WORKLOADS${MW_FLAGS:+ ($MW_FLAGS)}${POLICY:+ (one policy)} # the summary row's first column
# the raw baseline: the same kind of rows written with bpf() batches (table_ops_bench), on a fresh
# map writer's maps
km_map_writer_start "${FLAGS[@]}" || exit 1
raw=$(build/bench/table_ops_bench --socket "$KM_SOCKET" --bpffs-dir "$KM_DIR/bpffs/kmesh" \
	--workloads "$WORKLOADS" --per-service $((WORKLOADS / SERVICES)) --reps 3)
raw_mops=$(awk -F' *\\| *' '/^\| raw bpf\(\) batch: insert/ {print $4}' <<<"$raw")
[ -n "$raw_mops" ] || { echo "table_ops_bench gave no raw insert rate" >&2; exit 1; }
kill -TERM "$KM_MW_PID"
wait "$KM_MW_PID" 2>/dev/null

json() { "$KM_PY" -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
hwm_mb() { awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
rss_mb() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
wait_for() { # wait_for EXPR SECONDS [INTERVAL]: poll the agent's dump (short lists)
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(KM_DUMP_ITEMS=1 km_agent_json "$1" 2>/dev/null)" = true ] && return 0
		sleep "${3:-0.02}"
	done
	echo "timed out: $1" >&2; km_agent_json "d[\"update_latency_us\"]" >&2; tail -3 "$KM_DIR/istiod.log" >&2
	return 1
}

# POLICY=1: one mesh-wide policy in force before the push, so every workload address's identity
# row is written (without a policy, none is: nothing reads them)
responses=1 # the agent's update latencies counted once the push is applied
policy_text="No authorization policy is in force, so no identity rows are written (the first policy would write them)."
if [ -n "${POLICY:-}" ]; then
	km_istiod send '{"cmd": "set-authz", "policies": [{"name": "deny-none", "namespace": "istio-system",
	  "scope": "GLOBAL", "action": "DENY", "rules": [{"clauses": [{"matches": [{"principals": [{"exact": "spiffe://nowhere/ns/x/sa/x"}]}]}]}]}]}' >/dev/null
	responses=2 # the Authorization response is one
	policy_text="One mesh-wide DENY policy (it matches nobody) is in force, so the identity row of every workload address is written too."
fi
e2e=() internal=() agent_rss=() agent_idle=() mw_rss=() p50=() p99=()
for rep in $(seq 1 "$REPS"); do
	km_istiod send '{"cmd": "set", "resources": []}' >/dev/null
	rm -f "$KM_DIR/map-writer.log" "$KM_DIR/xds-agent.log"
	km_map_writer_start "${FLAGS[@]}" || exit 1
	# AGENT_FLAGS: more flags for the agent (push_cost_test.sh sets a small --xds-max-queued)
	km_agent_start_xds --log-level warn --xds-max-message $((1 << 30)) ${AGENT_FLAGS:-}
	wait_for 'd["istiod"]["connected"] and d["istiod"]["address"]["synced"]' 10 || exit 1
	agent_idle+=("$(rss_mb "$KM_AGENT_PID")") # connected, nothing held yet: the agent's own floor
	t0=$(km_istiod send '{"cmd": "push-prepared"}' | json 'd["t0"]')
	wait_for "d['update_latency_us']['count'] >= $responses and d['model']['workloads'] == $WORKLOADS" $WAIT 0.2 || exit 1
	dump=$(KM_DUMP_ITEMS=1 "$KM_TESTCTL" agent-dump --socket "$KM_DIR/run/xds-agent.sock")
	e2e+=("$(echo "$dump" | json "round(d['map_writer']['last_synced_unix_us'] / 1e6 - $t0, 3)")")
	internal+=("$(echo "$dump" | json 'round(d["update_latency_us"]["max"] / 1e6, 3)')")
	agent_rss+=("$(hwm_mb "$KM_AGENT_PID")")
	mw_rss+=("$(hwm_mb "$KM_MW_PID")")
	# the rows the pipeline wrote: the model's (decode_bench's count) and one authorization
	# identity per workload address of this node's network
	identities=$(echo "$dump" | json 'd["authz"]["identities"]')
	if [ "$rep" = 1 ]; then # the tables' kernel memory, full: bytes_memlock over rows
		table_bytes=0 table_rows=0
		for m in km_frontend km_service km_endpoint km_backend; do
			read -r b <<<"$(bpftool -j map show pinned "$KM_DIR/bpffs/kmesh/maps/$m" | json 'd["bytes_memlock"]')"
			table_bytes=$((table_bytes + b))
		done
		# rows of the synthetic mesh: a frontend per workload and per service, a service row per
		# service, an endpoint and a backend per workload (the dump would stop at 100k rows)
		table_rows=$((3 * WORKLOADS + 2 * SERVICES))
	fi
	# the dump runs on the agent's loop: do not poll while the changes are being measured
	km_istiod send "{\"cmd\": \"flap\", \"count\": $FLAPS, \"interval_ms\": 3}" >/dev/null
	sleep "$(awk -v n="$FLAPS" 'BEGIN {print n * 0.0035 + 0.2}')"
	wait_for "d['update_latency_us']['count'] >= $((FLAPS + responses))" $WAIT 0.5 || exit 1
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
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
goal() { # goal AT_100K AT_1M: issue 26's goal for this scale, if it has one
	case $WORKLOADS in 100000) echo "$1" ;; 1000000) echo "$2" ;; esac
}
e2e_med=$(median "${e2e[@]}")
ops=$(($(echo "$decode" | json 'd["ops"]') + identities))
ops_per_s=$(awk -v o="$ops" -v t="$e2e_med" 'BEGIN {printf "%.0f", o / t}')
cat <<MD
## xDS push: $WORKLOADS workloads and $SERVICES services in one response${MW_FLAGS:+, map writer $MW_FLAGS}${POLICY:+, one authorization policy in force}

Command: \`make bench\` (runs \`bench/xds_push.sh\`; \`WORKLOADS\`, \`SERVICES\`, \`REPS=$REPS\`,
\`FLAPS=$FLAPS\`${MW_FLAGS:+, \`MW_FLAGS=$MW_FLAGS\`} override). Fake istiod (python3-grpcio, TLS 1.3) on loopback; one response of
$bytes bytes; a fresh map writer and xDS agent (uid 65534) for each repetition; the map writer's
tables ${MW_FLAGS:+as $MW_FLAGS makes them}${MW_FLAGS:-on demand (the default)}. $policy_text

| figure | min | median | max | goal |
|---|---|---|---|---|
| push sent -> every row applied in the map writer (s) | $(stats "${e2e[@]}") | $(goal "<= 0.5 s" "<= 5 s") |
| agent: response received -> every row applied (s) | $(stats "${internal[@]}") | |
| xDS agent peak RSS (MB) | $(stats "${agent_rss[@]}") | $(goal "<= 48 MB" "<= 400 MB") |
| xDS agent RSS when connected, before the push (MB) | $(stats "${agent_idle[@]}") | |
| map writer peak RSS (MB) | $(stats "${mw_rss[@]}") | |
| one workload change, received -> applied, p50 (ms) | $(stats "${p50[@]}") | |
| one workload change, received -> applied, p99 (ms) | $(stats "${p99[@]}") | $(goal "" "<= 0.5 ms") |

Baseline measured in the same run on the same bytes (\`build/bench/decode_bench\`, 5 runs,
min/median/max): decoding and validating every resource $(echo "$decode" | json '" / ".join("%.1f" % x for x in d["decode_ms"])') ms;
decoding plus building the model and its $(echo "$decode" | json 'd["ops"]') table operations
$(echo "$decode" | json '" / ".join("%.1f" % x for x in d["decode_model_ms"])') ms; the model then holds
$(echo "$decode" | json '"%.1f MB of heap (%d bytes per resource)" % (d["model_bytes"] / 1048576, d["model_bytes"] / d["resources"])'),
its address index (which authorization and telemetry share) included.
Built as the agent keeps it once a policy exists, with authorization's records and identity rows: $(echo "$decode" | json '" / ".join("%.1f" % x for x in d["decode_model_full_ms"])') ms,
$(echo "$decode" | json '"%d table operations, %.1f MB of heap (%d bytes per resource)" % (d["ops_full"], d["model_full_bytes"] / 1048576, d["model_full_bytes"] / d["resources"])').
Ratio, median push-to-applied over median decode: **$(awk -v a="$e2e_med" -v b="$dec_ms" 'BEGIN {printf "%.1f", a * 1000 / b}')x**
(over decode plus model: $(awk -v a="$e2e_med" -v b="$mod_ms" 'BEGIN {printf "%.1f", a * 1000 / b}')x).

Table operations: $ops ($identities of them authorization identity rows) in the median push-to-applied, **$(awk -v r="$ops_per_s" 'BEGIN {printf "%.2f", r / 1e6}') M ops/s**;
raw \`BPF_MAP_UPDATE_BATCH\` inserts of the same kind of rows into maps of the same type and sizes,
measured in the same run (\`build/bench/table_ops_bench --workloads $WORKLOADS --per-service $((WORKLOADS / SERVICES)) --reps 3\`,
median): $raw_mops M ops/s; ratio **$(awk -v r="$ops_per_s" -v b="$raw_mops" 'BEGIN {printf "%.2f", r / 1e6 / b}')** (goal at least 0.7).
Kernel memory of the four routing tables once full (\`bytes_memlock\`, sized for this scale,
bucket arrays included): $(awk -v b="$table_bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB for $table_rows rows, $(awk -v b="$table_bytes" -v n="$table_rows" 'BEGIN {printf "%.0f", b / n}') bytes per row.
<!-- cost: e2e_s $e2e_med decode_model_ms $mod_ms agent_peak_mb $(median "${agent_rss[@]}") agent_idle_mb $(median "${agent_idle[@]}") model_bytes $(echo "$decode" | json 'd["model_bytes"]') resources $(echo "$decode" | json 'd["resources"]') model_full_bytes $(echo "$decode" | json 'd["model_full_bytes"]') -->
<!-- summary: $label | $SERVICES | $e2e_med | $ops | $(awk -v r="$ops_per_s" 'BEGIN {printf "%.2f M", r / 1e6}') | $raw_mops M | $(awk -v r="$ops_per_s" -v b="$raw_mops" 'BEGIN {printf "%.2f", r / 1e6 / b}') | $(median "${agent_rss[@]}") | $(median "${mw_rss[@]}") | $(awk -v b="$table_bytes" -v n="$table_rows" 'BEGIN {printf "%.0f", b / n}') | -->
MD
