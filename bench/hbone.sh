#!/usr/bin/env bash
# hbone.sh — HBONE inbound through kmesh-tunnel against nghttpx (Debian's nghttp2-proxy: C,
# nghttp2 + OpenSSL) doing the same HTTP/2 CONNECT over mutual TLS 1.3 on the same machine, in
# the same run, with the same clients, each as a ztunnel sends (its windows and frame size):
# bench/hbone_client_bench.c (nghttp2 + OpenSSL, fast enough that the servers set the pace) for
# setup and bulk, bench/lib/hbone_bench_client.py (python3-h2) to hold connections and streams for
# the memory rows; and the same application (bench/lib/hbone_app.py). The tunnel runs in
# its real setting (tests/lib/tunnel-env.sh: CNI chain, map writer, xDS agent deciding each
# stream); nghttpx listens in the same pod on another port and reaches the application through an
# HTTP/1.1 CONNECT to it. Servers on CPU 1, clients on CPU 0. Rounds interleave the two.
#   - stream setup on a pooled connection: p50/p99 per CONNECT (HEADERS -> END_STREAM of an
#     application that answers "ok" and closes), and the servers' CPU per stream (the tunnel's
#     with the map writer's and the agent's, which take part in each stream); then again with the
#     tunnel restarted with --hbone-decision-cache 0 (the agent asked for every stream, as for a
#     stream whose decision is not kept: the first of its principal, addresses and port, or the
#     first after a change of the policies or workloads), against nghttpx again;
#   - bulk, one stream each way: MB/s and the server's CPU seconds per GB; the cipher negotiated;
#   - memory: per idle pooled connection, per open stream, and 10,000 streams open at once.
# SETUP_STREAMS (2000), BULK_MB (512), ROUNDS (3) override. Prints markdown. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/lib/mesh-env.sh
source tests/lib/check.sh
source tests/lib/tunnel-env.sh
SETUP_STREAMS=${SETUP_STREAMS:-2000}
BULK_MB=${BULK_MB:-512}
ROUNDS=${ROUNDS:-3}
[ -x build/bench/hbone_client_bench ] || { echo "hbone.sh: build/bench/hbone_client_bench missing (make -f mk/build.mk build/bench/hbone_client_bench)" >&2; exit 1; }
command -v nghttpx >/dev/null || { echo "hbone.sh: nghttpx missing (mk/deps.sh installs nghttp2-proxy)" >&2; exit 1; }
NX_PIDFILE=
cleanup() {
	[ -n "$NX_PIDFILE" ] && [ -s "$NX_PIDFILE" ] && kill "$(cat "$NX_PIDFILE")" 2>/dev/null
	km_env_cleanup
}
trap cleanup EXIT
KM_TUNNEL_CERT_TTL=86400 KM_TUNNEL_LOG_LEVEL=warn km_tunnel_env_setup kmb$$ >/dev/null
pod_add c1 mesh
pod_add s1 mesh
S1=$(ip_of s1)
client_cert meshclient "$CLIENT_ID"
client_cert nghttpx "$SERVER_ID" # the same identity, signed by the same CA, for nghttpx
km_server_start s1 "../../bench/lib/hbone_app.py" 9000 9001 9002 9003 9010 --source-mb "$BULK_MB"
for p in 9000 9001 9002 9003 9010; do km_wait_listen s1 $p; done
wait_cert "$SERVER_ID" 'c and c["state"] == "valid"' 100
for _ in $(seq 1 100); do grep -q "HBONE: listening on pod mesh/s1" "$KM_DIR/tunnel.log" 2>/dev/null && break; sleep 0.1; done
NX_PIDFILE=$KM_DIR/nghttpx.pid
# ztunnel's server settings where nghttpx has them: 4 MiB stream window, 16 MiB connection window,
# 200 concurrent streams; TLS 1.3 only; one worker
km_in_pod s1 nghttpx --conf=/dev/null --frontend="$S1,15009" --backend="127.0.0.1,9010" \
	--verify-client --verify-client-cacert="$KM_DIR/pki/ca.pem" --tls-min-proto-version=TLSv1.3 \
	--workers=1 --frontend-http2-window-size=4194304 \
	--frontend-http2-connection-window-size=16777216 --frontend-http2-max-concurrent-streams=200 \
	--backend-connect-timeout=5s --log-level=WARN --errorlog-file="$KM_DIR/nghttpx.log" \
	--daemon --pid-file="$NX_PIDFILE" "$KM_DIR/pki/nghttpx.key" "$KM_DIR/pki/nghttpx.pem"
for _ in $(seq 1 50); do [ -s "$NX_PIDFILE" ] && break; sleep 0.1; done
sleep 0.5
NX_MASTER=$(cat "$NX_PIDFILE")
NX=$(pgrep -P "$NX_MASTER" | head -1) # the worker
MW=$(pgrep -f "kmesh-map-writer.*$KM_PREFIX" | head -1)
taskset -pc 1 "$TUNNEL" >/dev/null
taskset -pc 1 "$NX" >/dev/null

cpu_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
client() { # client SERVER MODE ARGS: SERVER tunnel (15008) or nghttpx (15009)
	local port=15008 auth_port=$3
	[ "$1" = nghttpx ] && port=15009
	km_in_pod c1 taskset -c 0 /usr/bin/python3 "$KM_ROOT/bench/lib/hbone_bench_client.py" "$S1" "$port" \
		"$S1:$auth_port" "$KM_DIR/pki/meshclient.pem" "$KM_DIR/pki/meshclient.key" "$KM_DIR/pki/ca.pem" \
		"$2" "${@:4}"
}
cclient() { # cclient SERVER MODE AUTH_PORT ARGS: the C client (setup, upload, download)
	local port=15008 auth_port=$3
	[ "$1" = nghttpx ] && port=15009
	km_in_pod c1 taskset -c 0 "$KM_ROOT/build/bench/hbone_client_bench" "$S1" "$port" \
		"$S1:$auth_port" "$KM_DIR/pki/meshclient.pem" "$KM_DIR/pki/meshclient.key" "$KM_DIR/pki/ca.pem" \
		"$2" "${@:4}"
}
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
TCK=$(getconf CLK_TCK)
declare -A setup50 setup99 setupcpu upmb upcpu downmb downcpu cipher
declare -a share
per_stream() { awk -v c="$1" -v n="$SETUP_STREAMS" -v t="$TCK" 'BEGIN {printf "%.1f", c / t / n * 1e6}'; }
for r in $(seq 1 "$ROUNDS"); do
	for s in tunnel nghttpx; do
		if [ $s = tunnel ]; then procs=("$TUNNEL" "$MW" "$KM_AGENT_PID"); bulk=("$TUNNEL"); else procs=("$NX"); bulk=("$NX"); fi
		c0=$(cpu_ticks "${procs[@]}")
		p0=(); for p in "${procs[@]}"; do p0+=("$(cpu_ticks "$p")"); done
		out=$(cclient $s setup 9002 "$SETUP_STREAMS")
		c1=$(cpu_ticks "${procs[@]}")
		setup50[$s]+="$(field p50_us <<<"$out") "
		setup99[$s]+="$(field p99_us <<<"$out") "
		setupcpu[$s]+="$(per_stream $((c1 - c0))) "
		if [ $s = tunnel ]; then # each process's share: the tunnel, the map writer, the agent
			i=0
			for p in "${procs[@]}"; do
				share[$i]+="$(per_stream $(($(cpu_ticks "$p") - p0[i]))) "
				i=$((i + 1))
			done
		fi
		cipher[$s]=$(field cipher <<<"$out")
		c0=$(cpu_ticks "${bulk[@]}")
		out=$(cclient $s upload 9000 "$BULK_MB")
		c1=$(cpu_ticks "${bulk[@]}")
		[ "$(field acked <<<"$out")" = $((BULK_MB << 20)) ] || { echo "upload through $s lost bytes: $out" >&2; exit 1; }
		upmb[$s]+="$(field mbps <<<"$out") "
		upcpu[$s]+="$(awk -v c=$((c1 - c0)) -v b=$((BULK_MB << 20)) -v t="$TCK" 'BEGIN {printf "%.2f", c / t / (b / 1e9)}') "
		c0=$(cpu_ticks "${bulk[@]}")
		out=$(cclient $s download 9001)
		c1=$(cpu_ticks "${bulk[@]}")
		[ "$(field bytes <<<"$out")" = $((BULK_MB << 20)) ] || { echo "download through $s lost bytes: $out" >&2; exit 1; }
		downmb[$s]+="$(field mbps <<<"$out") "
		downcpu[$s]+="$(awk -v c=$((c1 - c0)) -v b=$((BULK_MB << 20)) -v t="$TCK" 'BEGIN {printf "%.2f", c / t / (b / 1e9)}') "
	done
done
# the tunnel asking the agent for every stream (no decision kept), against nghttpx again
kill "$TUNNEL"
wait "$TUNNEL" 2>/dev/null || true
KM_TUNNEL_ARGS="--hbone-decision-cache 0" tunnel_start
for _ in $(seq 1 100); do cclient tunnel setup 9002 1 2>/dev/null | grep -q p50_us= && break; sleep 0.2; done
taskset -pc 1 "$TUNNEL" >/dev/null
declare -A ask50 askcpu
for r in $(seq 1 "$ROUNDS"); do
	for s in tunnel nghttpx; do
		if [ $s = tunnel ]; then procs=("$TUNNEL" "$MW" "$KM_AGENT_PID"); else procs=("$NX"); fi
		c0=$(cpu_ticks "${procs[@]}")
		out=$(cclient $s setup 9002 "$SETUP_STREAMS")
		c1=$(cpu_ticks "${procs[@]}")
		ask50[$s]+="$(field p50_us <<<"$out") "
		askcpu[$s]+="$(per_stream $((c1 - c0))) "
	done
done
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
kb_each() { awk -v k="$1" -v n="$2" 'BEGIN {printf "%.1f", k / n}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }

# memory: idle pooled connections, open streams, 10,000 streams
mem_of() { # mem_of SERVER PID MODE ARGS...: RSS growth (kB) while a client holds them
	local before after pid=$2 c
	before=$(rss_kb "$pid")
	client "$1" "$3" 9003 "${@:4}" >"$KM_DIR/hold.out" &
	c=$!
	for _ in $(seq 1 600); do grep -q ready "$KM_DIR/hold.out" 2>/dev/null && break; sleep 0.1; done
	sleep 0.5
	after=$(rss_kb "$pid")
	held=$(awk '{print $2}' "$KM_DIR/hold.out")
	pkill -TERM -f "hbone_bench_client.py .* $3 " 2>/dev/null
	wait "$c" 2>/dev/null
	sleep 1
	echo $((after - before)) "$after" "${held:-0}"
}
read -r idle_t _ _ <<<"$(mem_of tunnel "$TUNNEL" idle 200)"
read -r idle_n _ _ <<<"$(mem_of nghttpx "$NX" idle 200)"
read -r str_t _ _ <<<"$(mem_of tunnel "$TUNNEL" hold 1 200)"
read -r str_n _ _ <<<"$(mem_of nghttpx "$NX" hold 1 200)"
T0=$(rss_kb "$TUNNEL")
read -r big_t peak_t held_t <<<"$(mem_of tunnel "$TUNNEL" hold 50 200)"
read -r big_n peak_n held_n <<<"$(mem_of nghttpx "$NX" hold 50 200)"

cat <<EOF2
## HBONE inbound: kmesh-tunnel against nghttpx (issue 48)

The same HTTP/2 CONNECT over mutual TLS 1.3 (a client certificate required, ALPN h2) served by
\`kmesh-tunnel\` on the pod's 15008 (in its real setting: the xDS agent decides each stream by
the client's principal, the map writer makes its socket inside the pod) and by \`nghttpx\`
$(nghttpx --version | awk '{print $2}') (one worker; ztunnel's windows and 200 streams) in the same pod,
reaching the same application (nghttpx through an HTTP/1.1 CONNECT to it). The clients send as
a ztunnel does (4 MiB stream and 16 MiB connection windows, frames up to 1 MiB): a C one
(\`bench/hbone_client_bench.c\`, nghttp2 + OpenSSL) for setup and bulk, python3-h2 to hold the
connections and streams of the memory rows; on CPU 0, the servers on CPU 1. Medians of $ROUNDS
interleaved rounds.

| measure | kmesh-tunnel | nghttpx | tunnel / nghttpx |
|---|---|---|---|
| cipher negotiated | ${cipher[tunnel]} | ${cipher[nghttpx]} | |
| stream setup on a pooled connection, p50 (us) | $(med "${setup50[tunnel]}") | $(med "${setup50[nghttpx]}") | $(ratio "$(med "${setup50[tunnel]}")" "$(med "${setup50[nghttpx]}")") |
| stream setup, p99 (us) | $(med "${setup99[tunnel]}") | $(med "${setup99[nghttpx]}") | $(ratio "$(med "${setup99[tunnel]}")" "$(med "${setup99[nghttpx]}")") |
| CPU per stream set up (us; the tunnel's with the map writer's and the agent's: $(med "${share[0]}") + $(med "${share[1]}") + $(med "${share[2]}")) | $(med "${setupcpu[tunnel]}") | $(med "${setupcpu[nghttpx]}") | $(ratio "$(med "${setupcpu[tunnel]}")" "$(med "${setupcpu[nghttpx]}")") |
| ... each decided by the xDS agent (\`--hbone-decision-cache 0\`), p50 (us) | $(med "${ask50[tunnel]}") | $(med "${ask50[nghttpx]}") | $(ratio "$(med "${ask50[tunnel]}")" "$(med "${ask50[nghttpx]}")") |
| ... its CPU per stream (us) | $(med "${askcpu[tunnel]}") | $(med "${askcpu[nghttpx]}") | $(ratio "$(med "${askcpu[tunnel]}")" "$(med "${askcpu[nghttpx]}")") |
| upload, one stream, $BULK_MB MiB (MB/s) | $(med "${upmb[tunnel]}") | $(med "${upmb[nghttpx]}") | $(ratio "$(med "${upmb[tunnel]}")" "$(med "${upmb[nghttpx]}")") |
| ... server CPU per GB (s) | $(med "${upcpu[tunnel]}") | $(med "${upcpu[nghttpx]}") | $(ratio "$(med "${upcpu[tunnel]}")" "$(med "${upcpu[nghttpx]}")") |
| download, one stream (MB/s) | $(med "${downmb[tunnel]}") | $(med "${downmb[nghttpx]}") | $(ratio "$(med "${downmb[tunnel]}")" "$(med "${downmb[nghttpx]}")") |
| ... server CPU per GB (s) | $(med "${downcpu[tunnel]}") | $(med "${downcpu[nghttpx]}") | $(ratio "$(med "${downcpu[tunnel]}")" "$(med "${downcpu[nghttpx]}")") |
| memory per idle pooled connection (KB, 200 held) | $(kb_each "$idle_t" 200) | $(kb_each "$idle_n" 200) | |
| memory per open stream (KB, 200 on one connection) | $(kb_each "$str_t" 200) | $(kb_each "$str_n" 200) | |
| 10,000 streams asked at once (50 connections x 200): streams open, RSS growth / peak (MB) | $held_t: $((big_t / 1024)) / $((peak_t / 1024)) | $held_n: $((big_n / 1024)) / $((peak_n / 1024)) | |

(Command: \`bash bench/hbone.sh\`, $(date -u +%Y-%m-%d).)
EOF2
