#!/usr/bin/env bash
# xds_ondemand.sh — what a node holds when it asks istiod only for what it uses (--xds-on-demand)
# against the whole mesh sent to it (the default), in the same run on the same fake istiod state:
# a mesh of WORKLOADS workloads and SERVICES services (default 1M and 100k: issue 26's 1M case);
# the node on demand asks, in one `kmeshctl demand`, for USED services (default 200: a node of
# ~100 pods calling a couple of services each) and its own NODE_PODS pods by address (default 100).
# Measured for each mode on a fresh map writer and agent: request -> every row applied (the
# demand, or the full push), the rows written, the agent's CPU and peak RSS, the map writer's
# peak RSS. Prints markdown. Needs root.
set -uo pipefail
cd "$(dirname "$0")/.."
WORKLOADS=${WORKLOADS:-1000000}
SERVICES=${SERVICES:-$((WORKLOADS / 10))}
USED=${USED:-200}
NODE_PODS=${NODE_PODS:-100}
if [ -z "${MODE:-}" ]; then
	full=$(MODE=full bash bench/xds_ondemand.sh) || { echo "the whole-mesh run failed" >&2; exit 1; }
	od=$(MODE=on-demand bash bench/xds_ondemand.sh) || { echo "the on-demand run failed" >&2; exit 1; }
	read -r f_s f_rows f_wl f_svc f_cpu f_rss f_mw <<<"$full"
	read -r o_s o_rows o_wl o_svc o_cpu o_rss o_mw <<<"$od"
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3g", a / b}'; }
	cat <<MD
## On demand: a node of a $WORKLOADS-workload mesh asks only for what it uses

Command: \`bash bench/xds_ondemand.sh\` (\`WORKLOADS=$WORKLOADS SERVICES=$SERVICES USED=$USED
NODE_PODS=$NODE_PODS\` override). The fake istiod holds the whole mesh ($WORKLOADS workloads,
$SERVICES services, $((WORKLOADS / SERVICES)) workloads each). Whole mesh: the default agent, one
full push. On demand: \`--xds-on-demand\`, then one \`kmeshctl demand\` of $USED services (each
brings its workloads) and $NODE_PODS pods by address (\`/IP\`), as a node running $NODE_PODS
pods that call $USED services would ask through its DNS proxy. Each mode a fresh map writer
(tables on demand, the default), agent and fake istiod, the same synthetic mesh, in the same run.

| figure | whole mesh (default) | on demand | on demand / whole |
|---|---|---|---|
| workloads / services held | $f_wl / $f_svc | $o_wl / $o_svc | $(ratio "$o_wl" "$f_wl") |
| table rows written | $f_rows | $o_rows | $(ratio "$o_rows" "$f_rows") |
| push or demand -> every row applied (s) | $f_s | $o_s | $(ratio "$o_s" "$f_s") |
| agent CPU for it (s) | $f_cpu | $o_cpu | $(ratio "$o_cpu" "$f_cpu") |
| xDS agent peak RSS (MB) | $f_rss | $o_rss | $(ratio "$o_rss" "$f_rss") |
| map writer peak RSS (MB) | $f_mw | $o_mw | $(ratio "$o_mw" "$f_mw") |

What on demand gives up (docs/xds-agent.md): a pod's first connections to a service it had not
used go unbalanced until istiod's answer is applied (about a round trip after its DNS query), and
authorization by identity knows only the workloads demanded.
<!-- summary: ondemand $WORKLOADS $o_s $o_rows $o_rss full $f_s $f_rows $f_rss -->
MD
	exit 0
fi

source tests/lib/mesh-env.sh
trap km_env_cleanup EXIT
km_env_setup kmq$$ >/dev/null
km_make_pki
echo t >"$KM_DIR/token" && chmod 644 "$KM_DIR/token"
km_istiod_start
km_istiod send "{\"cmd\": \"prepare\", \"workloads\": $WORKLOADS, \"services\": $SERVICES}" >/dev/null
json() { "$KM_PY" -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hwm_mb() { awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
# the keys a node on demand asks for, and the workloads they bring
read -r expected keys <<<"$("$KM_PY" - "$WORKLOADS" "$SERVICES" "$USED" "$NODE_PODS" <<'PY'
import sys
w, s, used, pods = map(int, sys.argv[1:])
svcs = [i * (s // used) for i in range(used)]
wl = {i for i in range(w) if i % s in set(svcs)}
ks = ["bench/s%d.bench" % j for j in svcs]
for p in range(pods):
    i = p * (w // pods) + 1
    wl.add(i)
    ks.append("/10.%d.%d.%d" % (128 + (i >> 16 & 63), i >> 8 & 255, i & 255))
print(len(wl), ",".join(ks))
PY
)"
if [ "$MODE" = full ]; then
	km_map_writer_start --max-frontends $((WORKLOADS + SERVICES + 64)) --max-endpoints $((WORKLOADS + 64)) \
		--max-backends $((WORKLOADS + 64)) --max-services $((SERVICES + 64)) \
		--max-authz-addresses $((WORKLOADS + 64)) --log-level warn || exit 1
	km_agent_start_xds --log-level warn --xds-max-message $((1 << 30))
	km_wait_agent 'd["istiod"]["connected"] and d["istiod"]["address"]["synced"]' 10 || exit 1
	a0=$(ticks "$KM_AGENT_PID")
	t0=$(km_istiod send '{"cmd": "push-prepared"}' | json 'd["t0"]')
	want=$WORKLOADS svcs=$SERVICES
else
	km_istiod send '{"cmd": "push-prepared"}' >/dev/null # the state, to no stream
	km_map_writer_start --log-level warn || exit 1
	km_agent_start_xds --log-level warn --xds-on-demand --xds-on-demand-file ""  # not the production path
	km_wait_agent 'd["istiod"]["connected"] and d["istiod"]["address"]["acks"] >= 1' 10 || exit 1
	a0=$(ticks "$KM_AGENT_PID")
	t0=$(date +%s.%N)
	IFS=, read -r -a k <<<"$keys"
	"$KM_ROOT/build/bin/kmeshctl" --xds-socket "$KM_AGENT_SOCKET" demand "${k[@]}" >/dev/null || exit 1
	want=$expected svcs=$USED
fi
km_wait_agent "d['model']['workloads'] == $want and d['model']['services'] == $svcs" $((60 + WORKLOADS / 20000)) || exit 1
sleep 0.5 # the last rows' replies
dump=$(KM_DUMP_ITEMS=1 "$KM_TESTCTL" agent-dump --socket "$KM_DIR/run/xds-agent.sock")
echo "$(echo "$dump" | json "round(d['map_writer']['last_synced_unix_us'] / 1e6 - $t0, 3)")" \
	"$(echo "$dump" | json 'd["map_writer"]["ops_applied"]')" "$want" "$svcs" \
	"$(awk -v t="$(($(ticks "$KM_AGENT_PID") - a0))" 'BEGIN {printf "%.2f", t / 100}')" \
	"$(hwm_mb "$KM_AGENT_PID")" "$(hwm_mb "$KM_MW_PID")"
