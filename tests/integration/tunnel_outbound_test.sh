#!/usr/bin/env bash
# tunnel_outbound_test.sh — HBONE outbound end to end (issue 49, items 1 to 3): an enrolled pod
# (mesh/c1, set up by the real CNI chain, its certificate from the fake istiod's CA) connects to
# workloads the xDS agent says are reached over HBONE on another node; the kernel hands each
# connection to the tunnel, which opens HBONE with c1's certificate to an independent server
# (tests/lib/hbone_server.py: python3-h2 and ssl, answering as a ztunnel does) in a network
# namespace of its own ("node 2"). Checked:
#   - by pod IP and through a service's VIP: the server sees c1's SPIFFE id in its client
#     certificate, a CONNECT to podIP:targetPort, `forwarded: for="<c1>:<port>"`, a W3C
#     traceparent and c1's baggage; the bytes flow both ways, half-close each way;
#   - streams of one source identity to one destination share one TLS connection (the pool);
#   - 401 and 503 answers, a server with another identity, one without h2, one that stalls: the
#     application's connection is reset (never hangs), each counted by reason;
#   - a NONE workload is not tunneled; a connection from outside the pods is refused;
#   - chaos: the tunnel killed under traffic, the agent away, the map writer restarted.
# Our own inbound as the server, two nodes of this data plane: tunnel_nodes_test.sh.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"
source "$(dirname "$0")/../lib/tunnel-env.sh"

trap 'km_env_cleanup' EXIT
export KM_TUNNEL_OUTBOUND=169.254.20.15
KM_TUNNEL_ARGS="--hbone-outbound-connect-timeout-ms 1500 --hbone-outbound-cert-wait-ms 2500"
KM_TUNNEL_PING_MS=500
km_tunnel_env_setup kmo$$
pod_add c1 mesh
C1=$(ip_of c1)
check "mesh/client's certificate, for c1's connections out" \
	wait_cert "$CLIENT_ID" 'c and c["state"] == "valid"'
link_cgroup() { bpftool -j link show pinned "$KM_DIR/bpffs/kmesh/links/tunnel_origin" 2>/dev/null |
	"$KM_PY" -c 'import json, sys; print(json.load(sys.stdin)["cgroup_id"])'; }
check "--tunnel-cgroup auto: the map writer put the getsockopt program on the cgroup the tunnel named, its own ($(link_cgroup) = $(stat -c %i "$KM_TUNNEL_CGROUP"))" \
	eval '[ "$(link_cgroup)" = "$(stat -c %i "$KM_TUNNEL_CGROUP")" ]'

# "node 2": a namespace routed from the node, holding the HBONE servers' addresses
R=$KM_PREFIX-remote
ip netns add "$R"
KM_PODS+=("$R")
ip -n "$R" link set lo up
ip link add "kmr$$" netns "$KM_NODE" type veth peer name eth0 netns "$R"
ip -n "$KM_NODE" addr add 10.126.0.1/24 dev "kmr$$"
ip -n "$KM_NODE" link set "kmr$$" up
ip -n "$R" link set eth0 up
for i in 50 51 52 53 54 55; do ip -n "$R" addr add "10.126.0.$i/24" dev eth0; done
ip -n "$R" route add default via 10.126.0.1
REMOTE_ID=spiffe://$TD/ns/remote/sa/server
client_cert remote "$REMOTE_ID"
client_cert impostor "spiffe://$TD/ns/remote/sa/other"
declare -A SERVER_PID=()
server() { # server ADDR NAME CERT [options]
	ip netns exec "$R" "$KM_PY" "$KM_ROOT/tests/lib/hbone_server.py" "$1" --name "$2" \
		--cert "$KM_DIR/pki/$3.pem" --key "$KM_DIR/pki/$3.key" --ca "$KM_DIR/pki/ca.pem" \
		--log "$KM_DIR/hbone-$2.log" "${@:4}" >>"$KM_DIR/hbone-servers.out" 2>&1 &
	KM_PIDS+=($!)
	SERVER_PID[$2]=$!
}
server 10.126.0.50 r1 remote
server 10.126.0.51 denies remote --status 401
server 10.126.0.52 impostor impostor
server 10.126.0.53 noalpn remote --no-alpn
server 10.126.0.54 stalls remote --stall
server 10.126.0.55 busy remote --status 503
WAYPOINT_ID=spiffe://$TD/ns/remote/sa/waypoint
client_cert waypoint "$WAYPOINT_ID"
ip -n "$R" addr add 10.126.0.57/24 dev eth0
server 10.126.0.57 waypoint waypoint # a stock waypoint's pod, as far as HBONE goes
for _ in $(seq 1 50); do [ "$(grep -c listening "$KM_DIR/hbone-servers.out")" = 7 ] && break; sleep 0.1; done

wl() { # wl NAME ADDR [extra JSON]: a remote workload reached over HBONE
	echo ' {"workload": {"uid": "Kubernetes//Pod/remote/'$1'", "name": "'$1'", "namespace": "remote",
	   "serviceAccount": "server", "workloadName": "'$1'-wl", "node": "node-2", "tunnelProtocol": "HBONE",
	   "addresses": ["'$2'"]'${3:-}'}},'
}
mesh_config() { # mesh_config [EXTRA JSON RESOURCES,]: the workloads above, and EXTRA
cat <<JSON | km_write_config
{"resources": [${1:-}
 {"service": {"name": "far", "namespace": "remote", "hostname": "far.remote", "addresses": [{"address": "10.96.9.1"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}]}},
$(wl r1 10.126.0.50 ', "services": {"remote/far.remote": {"ports": [{"servicePort": 80, "targetPort": 8443}]}}')
$(wl denies 10.126.0.51)
$(wl impostor 10.126.0.52)
$(wl noalpn 10.126.0.53)
$(wl stalls 10.126.0.54)
$(wl busy 10.126.0.55)
 {"service": {"name": "waypoint", "namespace": "remote", "hostname": "waypoint.remote",
   "addresses": [{"address": "10.96.9.3"}], "ports": [{"servicePort": 15008, "targetPort": 15008}]}},
 {"workload": {"uid": "Kubernetes//Pod/remote/waypoint-1", "name": "waypoint-1", "namespace": "remote",
   "serviceAccount": "waypoint", "node": "node-2", "tunnelProtocol": "HBONE", "addresses": ["10.126.0.57"],
   "services": {"remote/waypoint.remote": {"ports": [{"servicePort": 15008, "targetPort": 15008}]}}}},
 {"service": {"name": "behind", "namespace": "remote", "hostname": "behind.remote", "addresses": [{"address": "10.96.9.2"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}],
   "waypoint": {"hostname": {"namespace": "remote", "hostname": "waypoint.remote"}, "hboneMtlsPort": 15008}}},
$(wl r3 10.126.0.58 ', "services": {"remote/behind.remote": {"ports": [{"servicePort": 80, "targetPort": 8080}]}}')
$(wl r4 10.126.0.59 ', "waypoint": {"address": {"address": "10.126.0.57"}, "hboneMtlsPort": 15008}')
 {"workload": {"uid": "Kubernetes//Pod/remote/plain", "name": "plain", "namespace": "remote",
   "node": "node-2", "addresses": ["10.126.0.56"]}},
 {"workload": {"uid": "Kubernetes//Pod/mesh/c1", "name": "c1", "namespace": "mesh", "serviceAccount": "client",
   "workloadName": "client-wl", "canonicalName": "client", "canonicalRevision": "v1", "node": "node-1",
   "addresses": ["$C1"]}}
]}
JSON
}
mesh_config
check "the agent's rows are in (11 workloads)" km_wait_rows backend "^backend" 11
last() { tail -n 1 "$KM_DIR/hbone-$1.log" 2>/dev/null; }
field() { last "$1" | "$KM_PY" -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"; }
holds() { # holds SERVER EXPR: EXPR is true of the server's last stream (d)
	last "$1" | "$KM_PY" -c 'import json, re, sys; d = json.load(sys.stdin); sys.exit(not eval("(" + sys.argv[1] + ")"))' "$2"
}

out=$(km_connect c1 10.126.0.50 8080 --send "hello over hbone" --half-close)
check "c1 to an HBONE workload on another node, by pod IP: through the tunnel, its bytes both ways ($out)" \
	eval '[ "$out" = "1 r1 10.126.0.50:8080
HELLO OVER HBONE" ] || [ "$out" = "1 r1 10.126.0.50:8080" ]'
check "... the server saw c1's SPIFFE id in its client certificate ($(field r1 'd["uris"]'))" \
	eval '[ "$(field r1 "d[\"uris\"]")" = "['"'"'$CLIENT_ID'"'"']" ]'
check "... a CONNECT to podIP:port, with forwarded for c1's address and a W3C traceparent ($(field r1 'd["headers"]'))" \
	holds r1 'd["headers"][":method"] == "CONNECT" and d["headers"][":authority"] == "10.126.0.50:8080" and
	          re.fullmatch("for=\"'$C1':[0-9]+\"", d["headers"]["forwarded"]) and
	          re.fullmatch("00-[0-9a-f]{32}-[0-9a-f]{16}-00", d["headers"]["traceparent"])'
check "... and c1's baggage, as the agent knows it ($(field r1 'd["headers"].get("baggage")'))" \
	holds r1 '"k8s.namespace.name=mesh" in d["headers"]["baggage"] and "client-wl" in d["headers"]["baggage"]'
check "... the application's half-close reached the server as END_STREAM, after its bytes" \
	holds r1 'd["read"] == "hello over hbone\n" and d["ended"] == "end_stream"'

out=$(km_connect c1 10.96.9.1 80)
check "through the service's VIP: a CONNECT to the picked workload's address and target port ($out)" \
	eval '[ "$out" = "1 r1 10.126.0.50:8443" ]'
check "... the two streams shared one TLS connection (the pool)" \
	eval '[ "$(tail -n 2 "$KM_DIR/hbone-r1.log" | "$KM_PY" -c "import json, sys; print(len({json.loads(l)[\"conn\"] for l in sys.stdin}))")" = 1 ]'
check "kmeshctl dump tunnels: the pooled connection, its identities, 2 streams so far ($(CTL dump tunnels | tr '\n' ';'))" \
	eval 'CTL dump tunnels | grep -q "10.126.0.50:15008 .*$CLIENT_ID .*$REMOTE_ID .*ready" &&
	      CTL -o json dump tunnels | "$KM_PY" -c "import json, sys
t = json.load(sys.stdin)[\"tunnels\"]
sys.exit(not [x for x in t if x[\"peer\"] == \"10.126.0.50:15008\" and x[\"source\"] == \"$CLIENT_ID\" and
              x[\"destination\"] == \"$REMOTE_ID\" and x[\"streamsTotal\"] == 2])"'

# Istio's metrics: the tunnel reports these connections (reporter source, mutual TLS); the
# kernel, which saw only a connection to the tunnel, none of them
series() { # series FILTER: the sum of istio_tcp_connections_closed_total samples matching FILTER
	local page
	page=$(km_metrics) || return 1
	grep '^istio_tcp_connections_closed_total{' <<<"$page" | grep -- "$1" | awk '{s += $NF} END {print s + 0}'
}
R1_SRC='reporter="source",source_workload="client-wl"'
check "istio_tcp_*: c1's two streams to r1, reporter source, mutual_tls, with the VIP's service ($(series "$R1_SRC.*destination_workload=\"r1-wl\""))" \
	eventually eval '[ "$(series "$R1_SRC.*destination_service=\"far.remote\".*destination_workload=\"r1-wl\".*connection_security_policy=\"mutual_tls\"")" -ge 1 ] &&
	                 [ "$(series "$R1_SRC.*destination_workload=\"r1-wl\".*connection_security_policy=\"mutual_tls\"")" = 2 ]'
check "... and none counted by the kernel as plaintext (connection_security_policy unknown)" \
	eval '[ "$(series "$R1_SRC.*connection_security_policy=\"unknown\"")" = 0 ]'

# Waypoints over HBONE (the default with the tunnel), as ztunnel reaches a stock Istio waypoint:
# to one of its pods' 15008, with the original VIP:port (or podIP:port) as the CONNECT target and
# the waypoint's identity checked
out=$(km_connect c1 10.96.9.2 80)
check "a service with a waypoint: to the waypoint's pod over HBONE, CONNECT to the VIP:port asked ($out)" \
	eval '[ "$out" = "1 waypoint 10.96.9.2:80" ]'
check "... the waypoint saw c1's SPIFFE id ($(field waypoint 'd["uris"]'))" \
	holds waypoint 'd["uris"] == ["'$CLIENT_ID'"]'
out=$(km_connect c1 10.126.0.59 9000)
check "a workload with a waypoint of its own: to the waypoint, CONNECT to podIP:port ($out)" \
	eval '[ "$out" = "1 waypoint 10.126.0.59:9000" ]'
check "the pool keeps the waypoint's connection apart from r1's (by destination identity)" \
	eval 'CTL -o json dump certs | "$KM_PY" -c "import json, sys
t = json.load(sys.stdin)[\"tunnels\"]
sys.exit(not [x for x in t if x[\"peer\"] == \"10.126.0.57:15008\" and x[\"destination\"] == \"$WAYPOINT_ID\" and x[\"streamsTotal\"] == 2])"'

refused() { metric "kmesh_tunnel_outbound_refused_total{reason=\"$1\"}"; }
out=$(km_connect c1 10.126.0.51 8080)
check "a 401 answer (the destination's policies deny c1): the connection is reset ($out)" \
	eval '[ "$out" = "1 error:ECONNRESET" ]'
out=$(km_connect c1 10.126.0.55 8080)
check "a 503 answer: reset ($out)" eval '[ "$out" = "1 error:ECONNRESET" ]'
out=$(km_connect c1 10.126.0.52 8080)
check "a server whose certificate names another identity: reset, nothing sent to it ($out)" \
	eval '[ "$out" = "1 error:ECONNRESET" ] && ! [ -s "$KM_DIR/hbone-impostor.log" ]'
out=$(km_connect c1 10.126.0.53 8080)
check "a server that does not speak h2: reset ($out)" eval '[ "$out" = "1 error:ECONNRESET" ]'
t0=$(date +%s%N)
out=$(km_connect c1 10.126.0.54 8080 --timeout 5)
ms=$((($(date +%s%N) - t0) / 1000000))
check "a server that stalls its handshake: reset after the connect timeout, not hung ($out in $ms ms)" \
	eval '[ "$out" = "1 error:ECONNRESET" ] && [ $ms -lt 4000 ]'
sleep 1.2 # the metrics file
check "... each counted by reason (401, 503, connect x3): $(grep outbound_refused "$KM_DIR/metrics/tunnel.prom" | grep -v ' 0$' | tr '\n' ' ')" \
	eval '[ "$(refused status_401)" = 1 ] && [ "$(refused status_503)" = 1 ] && [ "$(refused connect)" = 3 ] &&
	      [ "$(metric kmesh_tunnel_outbound_relayed_total)" = 4 ]'

# keepalive (--hbone-ping-ms 500 here; ztunnel's 10 s): the 503 server's pooled connection, idle,
# its server stopped (gone without a FIN): PINGed, and closed once the PING goes unanswered;
# r1's, whose server answers its PINGs, stays
ping0=$(metric 'kmesh_tunnel_outbound_pool_connections_total{result="ping"}')
kill -STOP "${SERVER_PID[busy]}"
gone() {
	sleep 0.2
	! CTL dump tunnels | grep -q "10.126.0.55:15008" &&
		[ "$(metric 'kmesh_tunnel_outbound_pool_connections_total{result="ping"}')" = $((ping0 + 1)) ]
}
check "keepalive: a pooled server gone silent is PINGed, and its connection closed when the PING goes unanswered" \
	eventually gone
check "... an idle one whose server answers stays ($(CTL dump tunnels | grep -c "10.126.0.50:15008") to r1)" \
	eval 'CTL dump tunnels | grep -q "10.126.0.50:15008"'
kill -CONT "${SERVER_PID[busy]}"
check "... and no stream is left counted open once they all ended (the bound of 16,384 counts these)" \
	eventually eval '[ "$(metric kmesh_tunnel_outbound_streams)" = 0 ]'

out=$(km_connect c1 10.126.0.56 8080 --timeout 0.5)
check "a NONE workload on another node: not through the tunnel (straight to it: nothing there) ($out)" \
	eval '[ "$out" = "1 error:ECONNREFUSED" ] || [ "$out" = "1 error:TIMEOUT" ]'
no_origin0=$(refused no_origin)
out=$(ip netns exec "$R" "$KM_PY" "$KM_ROOT/tests/lib/client.py" "$KM_TUNNEL_OUTBOUND" 15001 --timeout 2 2>&1)
sleep 1.2 # the metrics file
check "a connection to the tunnel's listener from outside the pods (no record of the kernel's): reset, counted no_origin ($out; $no_origin0 -> $(refused no_origin))" \
	eval '[ "$out" = "1 error:ECONNRESET" ] && [ "$(refused no_origin)" = $((no_origin0 + 1)) ]'

# Chaos (item 5): the tunnel killed under traffic, to a destination of the kernel's path (c2, a
# pod of this node outside xDS) and to a tunneled one (r1). The first never notices; the second
# fails fast while the tunnel is away (nothing listens: ECONNREFUSED at once, never a hang) and
# works again once it is back (the CNI agent names the pods again, the certificate comes back).
pod_add c2 mesh
C2=$(ip_of c2)
km_backend_start c2 8080
km_wait_listen c2 8080
steady() { # steady NAME HOST PORT RATE: new connections from c1 until steady_stop NAME
	km_in_pod c1 "$KM_PY" "$KM_ROOT/tests/lib/steady_client.py" "$2" "$3" --rate "$4" \
		--out "$KM_DIR/steady-$1.out" >/dev/null 2>&1 &
}
steady_stop() { # steady_stop NAME: prints "ok N failed M ..."
	pkill -TERM -f "steady_client.py .*--out $KM_DIR/steady-$1.out"
	for _ in $(seq 1 50); do [ -s "$KM_DIR/steady-$1.out" ] && break; sleep 0.1; done
	cat "$KM_DIR/steady-$1.out"
}
steady kernel "$C2" 8080 200
steady tunneled 10.126.0.50 8080 50
sleep 1
kill -KILL "$TUNNEL"
wait "$TUNNEL" 2>/dev/null
t0=$(date +%s%N)
out=$(km_connect c1 10.126.0.50 8080 --timeout 5)
ms=$((($(date +%s%N) - t0) / 1000000))
check "the tunnel killed: a tunneled connection fails at once ($out in $ms ms), never hangs" \
	eval '[ "$out" = "1 error:ECONNREFUSED" ] && [ $ms -lt 1000 ]'
sleep 1
tunnel_start
for _ in $(seq 1 50); do grep -q "HBONE outbound: listening" <(tail -n 50 "$KM_DIR/tunnel.log") && break; sleep 0.1; done
wait_cert "$CLIENT_ID" 'c and c["state"] == "valid"' 100
ok_after() { [ "$(km_connect c1 10.126.0.50 8080)" = "1 r1 10.126.0.50:8080" ]; }
check "... and back: tunneled connections work again" eventually ok_after
sleep 1
K=$(steady_stop kernel)
T=$(steady_stop tunneled)
check "the kernel's path never noticed: no connection to c2 failed ($K)" \
	eval 'read -r _ ok _ failed _ <<<"$K"; [ "$ok" -gt 100 ] && [ "$failed" = 0 ]'
check "the tunneled ones failed only while it was away, and worked before and after ($T)" \
	eval 'read -r _ ok _ failed _ <<<"$T"; [ "$ok" -gt 50 ] && [ "$failed" -gt 0 ] && ! grep -q TIMEOUT <<<"$T"'

# the xDS agent away: the destination cannot be checked, so tunneled connections are reset at
# once (never let through unchecked, never hung); back: they work again
kill -TERM "$KM_AGENT_PID"
wait "$KM_AGENT_PID" 2>/dev/null
out=$(km_connect c1 10.126.0.50 8080 --timeout 5)
check "the xDS agent away: a tunneled connection is reset at once ($out)" \
	eval '[ "$out" = "1 error:ECONNRESET" ]'
km_agent_start --node-name node-1 --tunnel-address "$KM_TUNNEL_OUTBOUND"
check "... and back: it works again" eventually ok_after

# the map writer killed and started again (the last of the three; SIGKILL: --detach-on-exit, which
# the tests' map writers run with, would uninstall): it adopts its pinned tables and programs, the
# agent syncs, the tunnel names its cgroup again
kill -KILL "$KM_MW_PID"
wait "$KM_MW_PID" 2>/dev/null
km_map_writer_start --tunnel-cgroup auto --dns-interface "kmt$$" --tunnel-address "$KM_TUNNEL_OUTBOUND"
check "the map writer restarted: tunneled connections work again" eventually ok_after

# A pod that connects before its identity's certificate came (the CA slow): it waits for it,
# at most --hbone-outbound-cert-wait-ms (2.5 s here), then is reset, never held longer
LATE_ID=spiffe://$TD/ns/mesh/sa/late
LATER_ID=spiffe://$TD/ns/mesh/sa/later
km_istiod send '{"cmd": "ca", "allowed": ["'$CLIENT_ID'", "'$SERVER_ID'", "'$LATE_ID'", "'$LATER_ID'"],
	"delay_ms": 1200}' >/dev/null
asked() { for _ in $(seq 1 50); do grep -q "certificate for $1: asking" "$KM_DIR/tunnel.log" && return 0; sleep 0.1; done; return 1; }
pod_add c3 mesh
asked "$LATE_ID"
waits0=$(metric kmesh_tunnel_outbound_cert_waits_total)
t0=$(date +%s%N)
out=$(km_connect c3 10.126.0.50 8080 --timeout 5)
ms=$((($(date +%s%N) - t0) / 1000000))
sleep 1.2 # the metrics file
check "a pod whose certificate is still coming (the CA answers in 1.2 s): its first connection waits for it and goes through ($out in $ms ms; waits $waits0 -> $(metric kmesh_tunnel_outbound_cert_waits_total))" \
	eval '[ "$out" = "1 r1 10.126.0.50:8080" ] && [ $ms -ge 500 ] &&
	      [ "$(metric kmesh_tunnel_outbound_cert_waits_total)" = $((waits0 + 1)) ]'
check "... with its own identity ($(field r1 'd["uris"]'))" holds r1 'd["uris"] == ["'$LATE_ID'"]'
km_istiod send '{"cmd": "ca", "delay_ms": 6000}' >/dev/null
nocert0=$(refused no_certificate)
pod_add c4 mesh
asked "$LATER_ID"
t0=$(date +%s%N)
out=$(km_connect c4 10.126.0.50 8080 --timeout 8)
ms=$((($(date +%s%N) - t0) / 1000000))
sleep 1.2 # the metrics file
check "... one that does not come in time (6 s): reset after the 2.5 s wait, not held ($out in $ms ms; no_certificate $nocert0 -> $(refused no_certificate))" \
	eval '[ "$out" = "1 error:ECONNRESET" ] && [ $ms -ge 2000 ] && [ $ms -lt 4500 ] &&
	      [ "$(refused no_certificate)" = $((nocert0 + 1)) ]'
km_istiod send '{"cmd": "ca", "delay_ms": 0}' >/dev/null

[ $KM_FAIL = 0 ] || { km_dump_logs tunnel map-writer xds-agent; cat "$KM_DIR"/hbone-*.log "$KM_DIR/hbone-servers.out"; }
km_check_summary tunnel_outbound
