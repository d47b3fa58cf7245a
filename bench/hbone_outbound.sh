#!/usr/bin/env bash
# hbone_outbound.sh — HBONE outbound (issue 49): an application's connection from an enrolled
# pod (c1) to a pod the xDS agent names as another node's HBONE workload (s1), three ways, in
# the same run with the same application (bench/lib/hbone_app.py) and client
# (bench/lib/outbound_client.py, plain TCP as an application connects):
#   - plain:  the kernel's path, s1 named NONE (the baseline: what the tunnel adds is above it);
#   - tunnel: s1 named HBONE on another node: the kernel hands the connection to kmesh-tunnel,
#     which opens HBONE with c1's certificate to s1's 15008, served by the same tunnel's inbound
#     half ("two tunnels", source and destination, in one process on this machine);
#   - nghttpx: the application asks nghttpx for the stream with an HTTP/1.1 CONNECT (nghttpx in
#     HTTP/2 proxy mode, its backend the same tunnel inbound of s1 over h2 and TLS 1.3 with c1's
#     certificate): a C HTTP/2 CONNECT client in place of the tunnel's outbound half.
# Rows: connect() to the first byte of an answer (p50/p99 over SETUP_CONNS, sequential, one
# connection at a time on a warm pool), and bulk download and upload (MB/s and the CPU seconds
# per GB of the processes that carry the bytes: the tunnel; nghttpx's worker and the tunnel).
# Servers on CPU 1, the client on CPU 0. ROUNDS (3) interleave; medians. Prints markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/lib/mesh-env.sh
source tests/lib/check.sh
source tests/lib/tunnel-env.sh
SETUP_CONNS=${SETUP_CONNS:-150}
BULK_MB=${BULK_MB:-256}
ROUNDS=${ROUNDS:-3}
command -v nghttpx >/dev/null || { echo "hbone_outbound.sh: nghttpx missing (mk/deps.sh installs nghttp2-proxy)" >&2; exit 1; }
NX_PIDFILE=
cleanup() {
	[ -n "$NX_PIDFILE" ] && [ -s "$NX_PIDFILE" ] && kill "$(cat "$NX_PIDFILE")" 2>/dev/null
	pkill -f "nghttpx --conf=/dev/null --http2-proxy --frontend=10.125.0.1,3128" 2>/dev/null
	km_env_cleanup
}
trap cleanup EXIT
export KM_TUNNEL_OUTBOUND=169.254.20.15
KM_TUNNEL_CERT_TTL=86400 KM_TUNNEL_LOG_LEVEL=warn km_tunnel_env_setup kmbo$$ >/dev/null
pod_add c1 mesh
pod_add s1 mesh
C1=$(ip_of c1)
S1=$(ip_of s1)
client_cert meshclient "$CLIENT_ID" # c1's identity, for nghttpx
km_server_start s1 "../../bench/lib/hbone_app.py" 9000 9001 9002 --source-mb "$BULK_MB"
for p in 9000 9001 9002; do km_wait_listen s1 $p; done
wait_cert "$SERVER_ID" 'c and c["state"] == "valid"' 100
wait_cert "$CLIENT_ID" 'c and c["state"] == "valid"' 100
for _ in $(seq 1 100); do grep -q "HBONE: listening on pod mesh/s1" "$KM_DIR/tunnel.log" 2>/dev/null && break; sleep 0.1; done
mesh() { # mesh NODE PROTOCOL: s1 as a workload of NODE with tunnel_protocol PROTOCOL
	cat <<-JSON | km_write_config
	{"resources": [
	 {"workload": {"uid": "Kubernetes//Pod/mesh/c1", "name": "c1", "namespace": "mesh", "serviceAccount": "client",
	   "node": "node-1", "addresses": ["$C1"]}},
	 {"workload": {"uid": "Kubernetes//Pod/mesh/s1", "name": "s1", "namespace": "mesh", "serviceAccount": "server",
	   "node": "$1", "tunnelProtocol": "$2", "addresses": ["$S1"]}}]}
	JSON
	sleep 0.5 # the agent reads it, the map writer writes the rows
}
NX_PIDFILE=$KM_DIR/nghttpx.pid
# an HTTP/2 proxy on the node (where the tunnel listens), its backend s1's HBONE port: h2 over
# TLS 1.3 with c1's certificate (nghttpx checks no SPIFFE id: --insecure, as it knows none).
# Started for each round: nghttpx leaves most CONNECT streams of its HTTP/1 clients half-open
# (it never ends its side after the server's END_STREAM; the server keeps the stream, as it
# must for a half-close), so a backend connection fills its 200 streams within a few hundred.
nx_start() {
	rm -f "$NX_PIDFILE"
	ip netns exec "$KM_NODE" nghttpx --conf=/dev/null --http2-proxy --frontend="10.125.0.1,3128;no-tls" \
		--backend="$S1,15008;;proto=h2;tls" --client-private-key-file="$KM_DIR/pki/meshclient.key" \
		--client-cert-file="$KM_DIR/pki/meshclient.pem" --insecure --tls-min-proto-version=TLSv1.3 \
		--workers=1 --backend-http2-window-size=4194304 \
		--backend-http2-connection-window-size=16777216 --log-level=WARN \
		--errorlog-file="$KM_DIR/nghttpx.log" --daemon --pid-file="$NX_PIDFILE"
	for _ in $(seq 1 50); do [ -s "$NX_PIDFILE" ] && break; sleep 0.1; done
	sleep 0.3
	NX=$(pgrep -P "$(cat "$NX_PIDFILE")" | head -1) # the worker
	taskset -pc 1 "$NX" >/dev/null
}
nx_stop() {
	local m
	m=$(cat "$NX_PIDFILE")
	kill "$m"
	for _ in $(seq 1 50); do kill -0 "$m" 2>/dev/null || break; sleep 0.1; done
	rm -f "$NX_PIDFILE"
}
taskset -pc 1 "$TUNNEL" >/dev/null

cpu_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }
TCK=$(getconf CLK_TCK)
run() { # run WAY MODE ARGS: the client from c1, through nghttpx for WAY nghttpx
	local px=()
	[ "$1" = nghttpx ] && px=(--proxy 10.125.0.1:3128)
	km_in_pod c1 taskset -c 0 /usr/bin/python3 "$KM_ROOT/bench/lib/outbound_client.py" "$2" "$S1" \
		${px[@]+"${px[@]}"} "${@:3}"
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
declare -A p50 p99 down downcpu up upcpu
for r in $(seq 1 "$ROUNDS"); do
	for way in plain tunnel nghttpx; do
		if [ $way = plain ]; then mesh node-1 NONE; else mesh node-2 HBONE; fi
		[ $way = nghttpx ] && nx_start
		procs=("$TUNNEL")
		[ $way = nghttpx ] && procs+=("$NX")
		run $way setup --n 1 >/dev/null # the pool warm
		read -r a b <<<"$(run $way setup --n "$SETUP_CONNS")"
		p50[$way]+="$a "
		p99[$way]+="$b "
		c0=$(cpu_ticks "${procs[@]}")
		read -r mbps n <<<"$(run $way download)"
		c1=$(cpu_ticks "${procs[@]}")
		[ "$n" = $((BULK_MB << 20)) ] || { echo "download through $way lost bytes: $n" >&2; exit 1; }
		down[$way]+="$mbps "
		downcpu[$way]+="$(awk -v c=$((c1 - c0)) -v b="$n" -v t="$TCK" 'BEGIN {printf "%.2f", c / t / (b / 1e9)}') "
		c0=$(cpu_ticks "${procs[@]}")
		read -r mbps n <<<"$(run $way upload --mb "$BULK_MB")"
		c1=$(cpu_ticks "${procs[@]}")
		up[$way]+="$mbps "
		upcpu[$way]+="$(awk -v c=$((c1 - c0)) -v b="$n" -v t="$TCK" 'BEGIN {printf "%.2f", c / t / (b / 1e9)}') "
		[ $way = nghttpx ] && nx_stop
	done
done
m() { median <<<"${1}"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }
cat <<EOF
## HBONE outbound: kmesh-tunnel against plaintext and nghttpx (issue 49)

\`bash bench/hbone_outbound.sh\` ($ROUNDS interleaved rounds, medians; $SETUP_CONNS connections; $BULK_MB MiB each way; servers on CPU 1, the client on CPU 0)

| measure | plain (kernel) | tunnel | nghttpx as the client | tunnel / nghttpx |
|---|---|---|---|---|
| connect() to the first byte, p50 (us) | $(m "${p50[plain]}") | $(m "${p50[tunnel]}") | $(m "${p50[nghttpx]}") | $(ratio "$(m "${p50[tunnel]}")" "$(m "${p50[nghttpx]}")") |
| ... p99 (us) | $(m "${p99[plain]}") | $(m "${p99[tunnel]}") | $(m "${p99[nghttpx]}") | $(ratio "$(m "${p99[tunnel]}")" "$(m "${p99[nghttpx]}")") |
| download MB/s | $(m "${down[plain]}") | $(m "${down[tunnel]}") | $(m "${down[nghttpx]}") | $(ratio "$(m "${down[tunnel]}")" "$(m "${down[nghttpx]}")") |
| ... CPU s/GB (tunnel; nghttpx + tunnel inbound) | - | $(m "${downcpu[tunnel]}") | $(m "${downcpu[nghttpx]}") | $(ratio "$(m "${downcpu[tunnel]}")" "$(m "${downcpu[nghttpx]}")") |
| upload MB/s | $(m "${up[plain]}") | $(m "${up[tunnel]}") | $(m "${up[nghttpx]}") | $(ratio "$(m "${up[tunnel]}")" "$(m "${up[nghttpx]}")") |
| ... CPU s/GB | - | $(m "${upcpu[tunnel]}") | $(m "${upcpu[nghttpx]}") | $(ratio "$(m "${upcpu[tunnel]}")" "$(m "${upcpu[nghttpx]}")") |
EOF
