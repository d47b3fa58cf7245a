#!/usr/bin/env bash
# hbone_load_test.sh — the tunnel under HBONE load (issue 48's tests; the node of
# tests/lib/tunnel-env.sh, an independent python3-h2 client sending as a ztunnel):
#   - 1,000 CONNECT streams on one TLS connection, at most 100 open at once (ztunnel's pool per
#     connection), each answered with the application's bytes; then a burst of 1,600 new streams
#     at once (8 connections of 200): every one 200 (it found two faults in the sockets the map
#     writer hands the tunnel: "ask again" answered 503, and a reply's drain closing the next
#     reply's socket);
#   - the destination's certificate renewed (10 s TTL) while streams are open: they carry on to
#     their end, and a new connection gets the new certificate;
#   - keepalive: an idle client that answers the tunnel's PINGs stays, one that answers nothing
#     (gone without a FIN) is closed once its PING goes unanswered;
#   - the tunnel killed (SIGKILL) while HBONE clients keep connecting and a pod keeps opening
#     plaintext connections at 300/s: the plaintext (the kernel's path) never notices; a new
#     HBONE connection fails at once (refused, never hangs) while the tunnel is gone; once it is
#     restarted (the CNI agent names the pods again, the certificates and listeners come back),
#     HBONE streams succeed again.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"
source "$(dirname "$0")/../lib/tunnel-env.sh"

trap 'km_env_cleanup' EXIT
KM_TUNNEL_PING_MS=500 km_tunnel_env_setup kmh$$
pod_add c1 mesh
pod_add s1 mesh
pod_add b1 plain
S1=$(ip_of s1)
client_cert meshclient "$CLIENT_ID"
km_backend_start s1 8080
km_server_start s1 halfclose_server.py 7070
km_wait_listen s1 8080
km_wait_listen s1 7070
wait_cert "$SERVER_ID" 'c and c["state"] == "valid"'
for _ in $(seq 1 50); do grep -q "HBONE: listening on pod mesh/s1" "$KM_DIR/tunnel.log" && break; sleep 0.1; done

out=$(hbone meshclient "$S1:8080" --streams 1000 --concurrent 100 --timeout 60)
check "1,000 CONNECT streams on one TLS connection, 100 at once as ztunnel pools: each 200 with the application's bytes ($(grep -c "status 200 read 's1" <<<"$out") of 1000)" \
	eval '[ "$(grep -c "status 200 read '"'"'s1\\\\n'"'"'" <<<"$out")" = 1000 ] && [ "$(wc -l <<<"$out")" = 1000 ]'

# a burst: 8 clients of 200 streams each at once (1,600 new streams to one pod, as a pooled
# ztunnel or tunnel opens them); the pod's sockets come from the map writer faster than one
# message each can be read: a socket it could not send now is asked again, never a 503
burst=()
for i in $(seq 1 8); do
	hbone meshclient "$S1:8080" --streams 200 --concurrent 200 --timeout 60 >"$KM_DIR/burst$i.out" &
	burst+=($!)
done
wait "${burst[@]}"
ok=$(cat "$KM_DIR"/burst*.out | grep -c "status 200 read 's1")
check "a burst of 1,600 new streams (8 connections of 200 at once): every one 200 with the application's bytes ($ok; $(cat "$KM_DIR"/burst*.out | grep -v "status 200" | sort | uniq -c | head -3 | tr '\n' ' ')$(grep -o "refused 503: .*" "$KM_DIR/tunnel.log" | sort | uniq -c | head -3 | tr '\n' ' '))" \
	eval '[ "$ok" = 1600 ]'

# ---- the certificate renewed under open streams ---------------------------------------------------
SERIAL=$(serial_of "$SERVER_ID")
hbone meshclient "$S1:7070" --send held --hold 8 --streams 5 >"$KM_DIR/held.out" &
HELD=$!
check "the destination's certificate renewed while 5 streams are open" \
	wait_cert "$SERVER_ID" 'c["serial"] != "'"$SERIAL"'" and c["state"] == "valid"' 90
NEW=$(serial_of "$SERVER_ID")
out=$(hbone meshclient "$S1:8080" --show-serial)
check "... a new connection is served the renewed certificate ($(head -1 <<<"$out"), dump $NEW)" \
	eval '[ "$(head -1 <<<"$out")" = "serial $(sed "s/^0*//" <<<"$NEW")" ]'
wait "$HELD"
check "... the streams opened before it carried on to their end: 5 answered with all they sent ($(head -c 120 "$KM_DIR/held.out"))" \
	eval '[ "$(grep -Ec "status 200 read '"'"'HELD(TICK\\\\n){12,}'"'"'" "$KM_DIR/held.out")" = 5 ]'

# ---- keepalive: a vanished client is found by an unanswered PING ------------------------------------
# idle_client SECONDS ANSWER: a mesh client that opens its HTTP/2 session and then stays silent
# for SECONDS, answering the server's PINGs (ANSWER 1, as h2 does when it reads: prints "open",
# or "closed after N s") or reading nothing at all (0: a peer gone without a FIN)
idle_client() {
	km_in_pod c1 /usr/bin/python3 -c 'import socket, ssl, sys, time
import h2.config, h2.connection, h2.events
secs, answer = float(sys.argv[2]), sys.argv[3] == "1"
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); ctx.check_hostname = False
ctx.load_verify_locations(sys.argv[6]); ctx.load_cert_chain(sys.argv[4], sys.argv[5])
ctx.set_alpn_protocols(["h2"])
tls = ctx.wrap_socket(socket.create_connection((sys.argv[1], 15008)))
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection(); tls.sendall(c.data_to_send())
t0 = time.time(); tls.settimeout(0.1)
if not answer:
    time.sleep(secs); print("silent"); sys.exit(0)
while time.time() - t0 < secs:
    try:
        d = tls.recv(65536)
    except socket.timeout:
        continue
    except OSError:
        d = b""
    if not d:
        print("closed after %.1f s" % (time.time() - t0)); sys.exit(0)
    c.receive_data(d); tls.sendall(c.data_to_send())
print("open")' "$S1" "$1" "$2" "$KM_DIR/pki/meshclient.pem" "$KM_DIR/pki/meshclient.key" "$KM_DIR/pki/ca.pem" 2>&1 | tail -1
}
out=$(idle_client 4 1)
check "keepalive (--hbone-ping-ms 500 here, ztunnel's 10 s by default): an idle client that answers the PINGs stays connected ($out)" \
	[ "$out" = open ]
P0=$(metric "kmesh_tunnel_hbone_connections_total{result=\"ping\"}")
idle_client 4 0 >/dev/null
sleep 1.1 # the metrics file
check "... a client that answers nothing (gone without a FIN) is closed after its PING went unanswered ($P0 -> $(metric "kmesh_tunnel_hbone_connections_total{result=\"ping\"}"))" \
	eval '[ "$(metric "kmesh_tunnel_hbone_connections_total{result=\"ping\"}")" = $((${P0:-0} + 1)) ] &&
	      grep -q "did not answer a PING in 1000 ms: closed" "$KM_DIR/tunnel.log"'

# ---- the tunnel killed under load -------------------------------------------------------------------
km_steady_start b1 "$S1" 8080 # plaintext to the same pod: the kernel's path
( while [ ! -e "$KM_DIR/load.stop" ]; do
	HBONE_FROM=c1 hbone meshclient "$S1:8080" --streams 20 --concurrent 10 --summary --timeout 3 >>"$KM_DIR/load.out"
done ) &
LOAD=$!
sleep 1
kill -KILL "$TUNNEL"
wait "$TUNNEL" 2>/dev/null
sleep 0.5
t0=$(date +%s%N)
out=$(hbone meshclient "$S1:8080" --timeout 5)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "the tunnel gone: a new HBONE connection fails at once, never hangs ($out, ${ms} ms)" \
	eval 'grep -q "^error: .*refused" <<<"$out" && [ "$ms" -lt 1500 ]'
sleep 1
tunnel_start
check "the tunnel restarted: the CNI agent names the pods again, HBONE streams succeed again" \
	eval 'for _ in $(seq 1 50); do grep -q "status 200" <<<"$(hbone meshclient "$S1:8080" --timeout 2)" && break; sleep 0.2; done
	      grep -q "status 200" <<<"$(hbone meshclient "$S1:8080")"'
sleep 1
touch "$KM_DIR/load.stop"
wait "$LOAD"
km_steady_stop
check "... and the HBONE load after it: its last round all 200 ($(tail -1 "$KM_DIR/load.out"))" \
	eval '[ "$(tail -1 "$KM_DIR/load.out")" = "20 status 200" ]'
check "plaintext on the kernel's path never noticed: $KM_STEADY_OK connections, $KM_STEADY_FAILED failed" \
	eval '[ "$KM_STEADY_FAILED" = 0 ] && [ "$KM_STEADY_OK" -gt 300 ]'
km_check_summary hbone-load
