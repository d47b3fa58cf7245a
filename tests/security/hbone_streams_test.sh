#!/usr/bin/env bash
# hbone_streams_test.sh — an HBONE client of the mesh that opens 10,000 CONNECT streams on one
# connection at once, each held open by an application that never closes (issue 48's security
# tests; the node of tests/lib/tunnel-env.sh): the tunnel serves at most 200 at once per
# connection (ztunnel's SETTINGS_MAX_CONCURRENT_STREAMS, enforced by nghttp2 from the first
# frame, before the client has seen our settings), refuses the others (RST_STREAM), its memory
# and descriptors stay bounded, and another client's stream meanwhile is answered at once.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"
source "$(dirname "$0")/../lib/tunnel-env.sh"

trap 'km_env_cleanup' EXIT
km_tunnel_env_setup kms$$
pod_add c1 mesh
pod_add s1 mesh
S1=$(ip_of s1)
client_cert meshclient "$CLIENT_ID"
km_backend_start s1 8080 keep # holds every connection until the client goes
km_backend_start s1 8081
km_wait_listen s1 8080
km_wait_listen s1 8081
wait_cert "$SERVER_ID" 'c and c["state"] == "valid"'
for _ in $(seq 1 50); do grep -q "HBONE: listening on pod mesh/s1" "$KM_DIR/tunnel.log" && break; sleep 0.1; done
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$TUNNEL/status"; }
fds() { ls "/proc/$TUNNEL/fd" | wc -l; }
out=$(hbone meshclient "$S1:8081") # one stream first: the tunnel's buffers warmed
RSS0=$(rss_kb)
FD0=$(fds)
hbone meshclient "$S1:8080" --streams 10000 --no-half-close --summary --timeout 15 >"$KM_DIR/flood.out" &
FLOOD=$!
for _ in $(seq 1 150); do [ "$(fds)" -ge $((FD0 + 180)) ] && break; sleep 0.1; done
sleep 1 # anything past the 200 would show by now
RSS1=$(rss_kb)
FD1=$(fds)
t0=$(date +%s%N)
out=$(hbone meshclient "$S1:8081")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "another client while the flood holds its 200 streams: answered at once ($out, ${ms} ms)" \
	eval 'grep -q "status 200 read '"'"'s1" <<<"$out" && [ "$ms" -lt 2000 ]'
# a socket to the application per stream held, some from the pod's pool made ahead (16)
check "... the tunnel bounded: descriptors $FD0 -> $FD1 (a socket to the application per stream held, and a refilled pool), RSS $RSS0 -> $RSS1 kB" \
	eval '[ "$FD1" -ge $((FD0 + 180)) ] && [ "$FD1" -le $((FD0 + 200 + 16 + 10)) ] && [ $((RSS1 - RSS0)) -lt 32768 ]'
wait "$FLOOD"
check "the flood: 200 streams served at once, the others refused (RST_STREAM REFUSED_STREAM): $(tr '\n' ' ' <"$KM_DIR/flood.out")" \
	"$KM_PY" -c 'import sys
c = {" ".join(l.split()[1:]): int(l.split()[0]) for l in open(sys.argv[1])}
served = sum(n for k, n in c.items() if k.startswith("status 200") or k == "timeout")
assert sum(c.values()) == 10000 and served == 200 and c.get("reset 7") == 9800, c' "$KM_DIR/flood.out"
check "... its connection gone, every descriptor it held is released" \
	eval 'for _ in $(seq 1 30); do [ "$(fds)" -le $((FD0 + 2)) ] && break; sleep 0.1; done; [ "$(fds)" -le $((FD0 + 2)) ]'
km_check_summary hbone-streams
