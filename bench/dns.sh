#!/usr/bin/env bash
# dns.sh — the node DNS proxy (the xDS agent's --dns-address) against its baseline in the same
# run: the same queries (NAMES service hostnames, A) answered by the proxy from its table, and
# sent straight to the upstream resolver that knows the same names (dnsmasq from a hosts file,
# as a node's resolver would); and names that are not the mesh's, through the proxy to that
# upstream. dnsperf, one client pinned to CPU 1 (the servers float: a forwarded query needs both the proxy
# and the upstream scheduled), everything on loopback in a private network namespace. Also the proxy's memory per name: the agent's RSS holding NAMES
# services with the proxy on, less without it. Prints a markdown section. Needs root.
set -uo pipefail
cd "$(dirname "$0")/.."
source tests/lib/mesh-env.sh
NAMES=${NAMES:-10000}
RUN_S=${RUN_S:-5}
MEM_NAMES=${MEM_NAMES:-100000}
PROXY=15353
UPSTREAM=15354
trap km_env_cleanup EXIT
km_env_setup kmdb$$ >/dev/null
command -v dnsperf >/dev/null || { echo "dns.sh: needs dnsperf (apt-get install dnsperf)" >&2; exit 1; }
in_node() { ip netns exec "$KM_NODE" "$@"; }

# N services: svc-I.bench.svc.cluster.local at 10.96+.X.Y (valid past 64k); the same names in a
# hosts file
mesh() {
	"$KM_PY" - "$1" "$KM_DIR/hosts" <<'PY' | km_write_config
import json, sys
n = int(sys.argv[1])
res = []
with open(sys.argv[2], "w") as hosts:
    for i in range(n):
        ip = "10.%d.%d.%d" % (96 + i // 62500, i // 250 % 250, i % 250 + 1)
        res.append({"service": {"name": "svc-%d" % i, "namespace": "bench",
                                "hostname": "svc-%d.bench.svc.cluster.local" % i,
                                "addresses": [{"address": ip}], "ports": [{"servicePort": 80}]}})
        hosts.write("%s svc-%d.bench.svc.cluster.local\n" % (ip, i))
print(json.dumps({"resources": res}))
PY
}
agent_up() { # agent_up N [ARGS]: the agent (in the node's netns) holding N services
	KM_AGENT_NETNS=node
	km_agent_start --log-level warn "${@:2}"
	km_wait_agent "d['model']['services'] == $1" 120 >/dev/null || { echo "dns.sh: the agent did not load $1 services (log: $(tail -n 3 "$KM_DIR/xds-agent.log"))" >&2; exit 1; }
}

mesh "$NAMES"
for i in $(seq 0 $((NAMES - 1))); do echo "svc-$i.bench.svc.cluster.local A"; done >"$KM_DIR/mesh.q"
for i in $(seq 0 999); do echo "ext-$i.example.com A"; done >"$KM_DIR/ext.q"
in_node ip link set lo up
in_node dnsmasq --keep-in-foreground --no-resolv --no-hosts --user=root --port=$UPSTREAM \
	--listen-address=127.0.0.1 --bind-interfaces --addn-hosts="$KM_DIR/hosts" \
	--address=/example.com/192.0.2.1 --cache-size=0 --pid-file= 2>"$KM_DIR/dnsmasq.log" &
KM_PIDS+=($!)
agent_up "$NAMES" --dns-address 127.0.0.1:$PROXY --dns-upstream 127.0.0.1:$UPSTREAM
sleep 0.5

# perf PORT QUERIES: "qps p50_us p99_us" over RUN_S seconds, 10 queries in flight
perf() {
	local out
	out=$(in_node taskset -c 1 dnsperf -s 127.0.0.1 -p "$1" -d "$2" -l "$RUN_S" -c 1 -q 10 -v 2>&1)
	echo "$(awk '/Queries per second/ {printf "%d", $4}' <<<"$out")" \
		"$(awk '/^> / {printf "%.0f\n", $NF * 1e6}' <<<"$out" | sort -n | awk '{v[NR] = $1} END {print v[int(NR * 0.5) + 1], v[int(NR * 0.99) + 1]}')"
}
read -r up_qps up_p50 up_p99 <<<"$(perf $UPSTREAM "$KM_DIR/mesh.q")"
ticks() { awk '{print $14 + $15}' "/proc/$KM_AGENT_PID/stat"; } # user + system, 10 ms each
t0=$(ticks)
read -r px_qps px_p50 px_p99 <<<"$(perf $PROXY "$KM_DIR/mesh.q")"
# the agent's CPU per answered query: steadier than queries/s on two shared cores
px_cpu=$(awk -v t="$(($(ticks) - t0))" -v q="$px_qps" -v s="$RUN_S" 'BEGIN {printf "%.1f", q ? t * 10000 / (q * s) : 0}')
read -r fw_qps fw_p50 fw_p99 <<<"$(perf $PROXY "$KM_DIR/ext.q")"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b ? a / b : 0}'; }

# memory per name: the name table's heap over MEM_NAMES services (bench/dns_names_bench.c)
mem=$(build/bench/dns_names_bench "$MEM_NAMES")
per_name=$("$KM_PY" -c 'import json, sys; print(round(json.loads(sys.argv[1])["bytes_per_name"]))' "$mem")

cat <<EOF
## DNS proxy

\`bash bench/dns.sh\` (NAMES=$NAMES, ${RUN_S} s per row, dnsperf with 10 queries in flight on CPU 1,
servers not pinned, loopback). The baseline is the upstream resolver (dnsmasq) answering the same
names from a hosts file, in the same run.

| queries | server | queries/s | p50 (us) | p99 (us) | queries/s over the baseline |
|---|---|---|---|---|---|
| $NAMES service names, A | upstream directly (baseline) | $up_qps | $up_p50 | $up_p99 | 1.00 |
| the same | the proxy, from its table | $px_qps | $px_p50 | $px_p99 | $(ratio "$px_qps" "$up_qps") |
| 1000 other names | the proxy, forwarded to the upstream | $fw_qps | $fw_p50 | $fw_p99 | $(ratio "$fw_qps" "$up_qps") |

The agent's CPU per query answered from its table: $px_cpu us (its user and system time over that
row, over the queries answered): the loop's receive and send and the answer itself. While ldns
read and wrote the messages it was 17-23 us (2026-11-28: the agents before and after, swapped
in the same session, 17.1 / 23.4 against 9.7 / 11.0 us).

Memory: $per_name bytes of heap per name (\`build/bench/dns_names_bench $MEM_NAMES\`: the name table
seeded from a model of $MEM_NAMES services, glibc's bytes in use before and after): a lowercase
copy of each hostname, its hash entry and its list of services; the addresses are the model's.
EOF
