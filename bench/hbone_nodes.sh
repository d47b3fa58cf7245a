#!/usr/bin/env bash
# hbone_nodes.sh — two nodes of this data plane on one machine (issue 49; the set-up of
# tests/integration/tunnel_nodes_test.sh): an application in c1 (node 1) reaches one in s2
# (node 2, bench/lib/hbone_app.py), the same client (bench/lib/outbound_client.py) three ways:
#   - kernel: the kernel path between the nodes, as with IPsec (--hbone-over-ipsec kernel: node 2's
#     pod CIDR in node 1's km_ipsec_cidr; this kernel has no ESP, so the bytes are plaintext here:
#     the road's floor, without IPsec's own cost);
#   - tunnel: HBONE through two tunnels, node 1's outbound (c1's certificate) and node 2's
#     inbound (s2's), each on its own CPU;
#   - nghttpx: nghttpx on both ends, as close to the same HBONE as it goes: on node 1 an HTTP/2
#     proxy the application asks with an HTTP/1.1 CONNECT, its backend on node 2 a second
#     nghttpx in s2's pod (h2 over TLS 1.3, both certificates checked against the mesh CA, one
#     worker each, ztunnel's windows), whose backend the application reads the CONNECT from.
# Rows: connect() to the first byte (p50/p99, SETUP_CONNS one at a time, warm pools); bulk down
# and up (MB/s; CPU s/GB of the processes that carry the bytes: both tunnels, or both nghttpx);
# connections per second (RATE_CONC at a time for RATE_S seconds, each to its first byte, the
# client in one thread); then each tunnel's memory while HOLD tunneled streams are open. Client
# and node 1's proxy on CPU 0, node 2's proxy and the application on CPU 1. ROUNDS (3)
# interleave; medians. Prints markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/lib/mesh-env.sh
source tests/lib/check.sh
source tests/lib/tunnel-env.sh
SETUP_CONNS=${SETUP_CONNS:-150}
BULK_MB=${BULK_MB:-256}
RATE_S=${RATE_S:-4}
RATE_CONC=${RATE_CONC:-32}
HOLD=${HOLD:-10000}
ROUNDS=${ROUNDS:-3}
command -v nghttpx >/dev/null || { echo "hbone_nodes.sh: nghttpx missing (mk/deps.sh installs nghttp2-proxy)" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)" # HOLD streams: the client's sockets, the tunnels' and the application's
NX_PIDS=()
cleanup() {
	local p
	for p in "${NX_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	km_nodes_cleanup
}
trap cleanup EXIT
export KM_TUNNEL_OUTBOUND=169.254.20.15
export KM_TUNNEL_CERT_TTL=86400 KM_TUNNEL_LOG_LEVEL=${KM_TUNNEL_LOG_LEVEL:-warn}
km_node_switch 1
KM_NODE_NAME=node-1 KM_POD_SUBNET=10.125.0 km_tunnel_env_setup kmbn1$$ >/dev/null
N1_NS=$KM_NODE
PKI=$KM_DIR/pki
client_cert meshclient "$CLIENT_ID" # c1's identity, for node 1's nghttpx
client_cert meshserver "$SERVER_ID" # s2's, for node 2's
km_node_switch 2
KM_NODE_NAME=node-2 KM_POD_SUBNET=10.127.0 KM_PKI_FROM=$PKI km_tunnel_env_setup kmbn2$$ >/dev/null
km_nodes_link "$N1_NS" 10.125.0.0/24 "$KM_NODE" 10.127.0.0/24
pod_add s2 mesh
S2=$(ip_of s2)
km_server_start s2 "../../bench/lib/hbone_app.py" 9000 9001 9002 9003 9010 --source-mb "$BULK_MB"
for p in 9000 9001 9002 9003 9010; do km_wait_listen s2 $p; done
km_node_switch 1
pod_add c1 mesh
C1=$(ip_of c1)
MESH='{"resources": [
 {"workload": {"uid": "Kubernetes//Pod/mesh/c1", "name": "c1", "namespace": "mesh", "serviceAccount": "client",
   "node": "node-1", "tunnelProtocol": "HBONE", "addresses": ["'$C1'"]}},
 {"workload": {"uid": "Kubernetes//Pod/mesh/s2", "name": "s2", "namespace": "mesh", "serviceAccount": "server",
   "node": "node-2", "tunnelProtocol": "HBONE", "addresses": ["'$S2'"]}}]}'
for n in 2 1; do
	km_node_switch $n
	km_write_config <<<"$MESH"
	km_wait_rows backend "^backend" 2 >/dev/null || { echo "node $n: no rows" >&2; exit 1; }
done
km_node_switch 2
wait_cert "$SERVER_ID" 'c and c["state"] == "valid"' 100
for _ in $(seq 1 100); do grep -q "HBONE: listening on pod mesh/s2" "$KM_DIR/tunnel.log" && break; sleep 0.1; done
T2=$TUNNEL
km_in_pod s2 nghttpx --conf=/dev/null --frontend="$S2,15009" --backend="127.0.0.1,9010" \
	--verify-client --verify-client-cacert="$KM_DIR/pki/ca.pem" --tls-min-proto-version=TLSv1.3 \
	--workers=1 --frontend-http2-window-size=4194304 \
	--frontend-http2-connection-window-size=16777216 --frontend-http2-max-concurrent-streams=200 \
	--backend-connect-timeout=5s --log-level=WARN --errorlog-file="$KM_DIR/nghttpx.log" \
	--daemon --pid-file="$KM_DIR/nghttpx.pid" "$KM_DIR/pki/meshserver.key" "$KM_DIR/pki/meshserver.pem" \
	2>>"$KM_DIR/nghttpx.log"
for _ in $(seq 1 50); do [ -s "$KM_DIR/nghttpx.pid" ] && break; sleep 0.1; done
sleep 0.3
NX_PIDS+=("$(cat "$KM_DIR/nghttpx.pid")")
NX2=$(pgrep -P "${NX_PIDS[0]}" | head -1)
km_node_switch 1
wait_cert "$CLIENT_ID" 'c and c["state"] == "valid"' 100
T1=$TUNNEL
taskset -pc 0 "$T1" >/dev/null
taskset -pc 1 "$T2" >/dev/null
taskset -pc 1 "$NX2" >/dev/null
ipsec_row() { # ipsec_row update|delete: node 2's pod CIDR in node 1's km_ipsec_cidr, or not
	km_node_switch 1
	km_ipsec_cidr_row "$1" 10.127.0.0/24 2>/dev/null || [ "$1" = delete ] # (none to delete: fine)
}
# node 1's nghttpx, started each round (it leaves the CONNECT streams of its HTTP/1 clients
# half-open: bench/hbone_outbound.sh)
nx_start() {
	km_node_switch 1
	rm -f "$KM_DIR/nghttpx.pid"
	ip netns exec "$KM_NODE" nghttpx --conf=/dev/null --http2-proxy --frontend="10.125.0.1,3128;no-tls" \
		--backend="$S2,15009;;proto=h2;tls" --client-private-key-file="$KM_DIR/pki/meshclient.key" \
		--client-cert-file="$KM_DIR/pki/meshclient.pem" \
		--insecure --tls-min-proto-version=TLSv1.3 --workers=1 \
		--backend-http2-window-size=4194304 --backend-http2-connection-window-size=16777216 \
		--log-level=WARN --errorlog-file="$KM_DIR/nghttpx.log" --daemon --pid-file="$KM_DIR/nghttpx.pid" 2>>"$KM_DIR/nghttpx.log"
	for _ in $(seq 1 50); do [ -s "$KM_DIR/nghttpx.pid" ] && break; sleep 0.1; done
	sleep 0.3
	NX1_MASTER=$(cat "$KM_DIR/nghttpx.pid")
	NX1=$(pgrep -P "$NX1_MASTER" | head -1)
	taskset -pc 0 "$NX1" >/dev/null
}
nx_stop() {
	kill "$NX1_MASTER"
	for _ in $(seq 1 50); do kill -0 "$NX1_MASTER" 2>/dev/null || break; sleep 0.1; done
}

cpu_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }
TCK=$(getconf CLK_TCK)
run() { # run WAY MODE ARGS: the client in c1, through node 1's nghttpx for WAY nghttpx
	local px=()
	[ "$1" = nghttpx ] && px=(--proxy 10.125.0.1:3128)
	km_node_switch 1
	km_in_pod c1 taskset -c 0 /usr/bin/python3 "$KM_ROOT/bench/lib/outbound_client.py" "$2" "$S2" \
		${px[@]+"${px[@]}"} "${@:3}"
}
per_gb() { awk -v c="$1" -v b="$2" -v t="$TCK" 'BEGIN {printf "%.2f", c / t / (b / 1e9)}'; }
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
declare -A p50 p99 down downcpu up upcpu rate ratecpu
for r in $(seq 1 "$ROUNDS"); do
	for way in kernel tunnel nghttpx; do
		procs=("$T1" "$T2")
		if [ $way = kernel ]; then ipsec_row update; else ipsec_row delete; fi
		[ $way = nghttpx ] && nx_start && procs=("$NX1" "$NX2")
		run $way setup --n 1 >/dev/null # the pools warm
		read -r a b <<<"$(run $way setup --n "$SETUP_CONNS")"
		p50[$way]+="$a " p99[$way]+="$b "
		c0=$(cpu_ticks "${procs[@]}")
		read -r mbps n <<<"$(run $way download)"
		c1=$(cpu_ticks "${procs[@]}")
		[ "$n" = $((BULK_MB << 20)) ] || { echo "download through $way lost bytes: $n" >&2; exit 1; }
		down[$way]+="$mbps " downcpu[$way]+="$(per_gb $((c1 - c0)) "$n") "
		c0=$(cpu_ticks "${procs[@]}")
		read -r mbps n <<<"$(run $way upload --mb "$BULK_MB")"
		c1=$(cpu_ticks "${procs[@]}")
		up[$way]+="$mbps " upcpu[$way]+="$(per_gb $((c1 - c0)) "$n") "
		if [ $way != nghttpx ]; then # (the rate client speaks no CONNECT)
			c0=$(cpu_ticks "${procs[@]}")
			read -r cps failed <<<"$(run $way rate --conc "$RATE_CONC" --seconds "$RATE_S")"
			c1=$(cpu_ticks "${procs[@]}")
			[ "$failed" = 0 ] || echo "rate through $way: $failed failed" >&2
			rate[$way]+="$cps "
			ratecpu[$way]+="$(awk -v c=$((c1 - c0)) -v n="$cps" -v s="$RATE_S" -v t="$TCK" 'BEGIN {printf "%.0f", c / t / (n * s) * 1e6}') "
		fi
		[ $way = nghttpx ] && nx_stop
	done
done
ipsec_row delete

# memory: HOLD tunneled streams open at once (each tunnel's RSS before and while they are)
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
r1=$(rss_kb "$T1") r2=$(rss_kb "$T2")
km_node_switch 1
km_in_pod c1 /usr/bin/python3 "$KM_ROOT/bench/lib/outbound_client.py" hold "$S2" --n "$HOLD" >"$KM_DIR/hold.out" 2>&1 &
HC=$!
for _ in $(seq 1 1200); do grep -q ready "$KM_DIR/hold.out" && break; sleep 0.1; done
open=0
for _ in $(seq 1 300); do
	sleep 0.2
	open=$(metric kmesh_tunnel_outbound_streams)
	[ "${open:-0}" -ge "$HOLD" ] && break
done
sleep 1
h1=$(rss_kb "$T1") h2=$(rss_kb "$T2")
[ "${open:-0}" -ge "$HOLD" ] || { echo "only ${open:-0} of $HOLD streams opened:" >&2; cat "$KM_DIR/hold.out" >&2
	grep -v "certificate\|istiod" "$KM_DIR/tunnel.log" | tail -n 20 >&2 || true
	grep 'refused_total{.*} [1-9]' "$KM_DIR/metrics/tunnel.prom" >&2 || true; km_node_switch 2;
	grep -o "refused 503: .*" "$KM_DIR/tunnel.log" | sort | uniq -c >&2 || true; km_node_switch 1; }
pkill -TERM -f "outbound_client.py hold" || true
wait "$HC" 2>/dev/null || true
km_node_switch 1
m() { median <<<"${1}"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }
cat <<EOF
## Two nodes: the kernel road, two tunnels, and nghttpx on both ends (issue 49)

\`bash bench/hbone_nodes.sh\` ($ROUNDS interleaved rounds, medians; $SETUP_CONNS connections; $BULK_MB MiB each way; $RATE_CONC connections at a time for $RATE_S s; the client and node 1's proxy on CPU 0, node 2's proxy and the application on CPU 1)

| measure | kernel road (IPsec rule, no ESP here) | two tunnels | nghttpx on both ends | tunnels / nghttpx |
|---|---|---|---|---|
| connect() to the first byte, p50 (us) | $(m "${p50[kernel]}") | $(m "${p50[tunnel]}") | $(m "${p50[nghttpx]}") | $(ratio "$(m "${p50[tunnel]}")" "$(m "${p50[nghttpx]}")") |
| ... p99 (us) | $(m "${p99[kernel]}") | $(m "${p99[tunnel]}") | $(m "${p99[nghttpx]}") | $(ratio "$(m "${p99[tunnel]}")" "$(m "${p99[nghttpx]}")") |
| download MB/s | $(m "${down[kernel]}") | $(m "${down[tunnel]}") | $(m "${down[nghttpx]}") | $(ratio "$(m "${down[tunnel]}")" "$(m "${down[nghttpx]}")") |
| ... CPU s/GB (both proxies) | - | $(m "${downcpu[tunnel]}") | $(m "${downcpu[nghttpx]}") | $(ratio "$(m "${downcpu[tunnel]}")" "$(m "${downcpu[nghttpx]}")") |
| upload MB/s | $(m "${up[kernel]}") | $(m "${up[tunnel]}") | $(m "${up[nghttpx]}") | $(ratio "$(m "${up[tunnel]}")" "$(m "${up[nghttpx]}")") |
| ... CPU s/GB | - | $(m "${upcpu[tunnel]}") | $(m "${upcpu[nghttpx]}") | $(ratio "$(m "${upcpu[tunnel]}")" "$(m "${upcpu[nghttpx]}")") |
| new connections/s, each to its first byte | $(m "${rate[kernel]}") | $(m "${rate[tunnel]}") | - | $(ratio "$(m "${rate[tunnel]}")" "$(m "${rate[kernel]}")") of the kernel road |
| ... tunnels' CPU us per connection (both) | - | $(m "${ratecpu[tunnel]}") | - | - |

$HOLD tunneled streams open at once ($open counted by node 1's tunnel): node 1's tunnel (outbound) $r1 -> $h1 KiB RSS ($(awk -v a="$r1" -v b="$h1" -v n="$HOLD" 'BEGIN {printf "%.2f", (b - a) / n}') KiB a stream), node 2's (inbound) $r2 -> $h2 KiB ($(awk -v a="$r2" -v b="$h2" -v n="$HOLD" 'BEGIN {printf "%.2f", (b - a) / n}') KiB a stream).
EOF
