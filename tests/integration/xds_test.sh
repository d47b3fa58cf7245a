#!/usr/bin/env bash
# xds_test.sh — the xDS agent against a real gRPC peer: a fake istiod (python3-grpcio) serving
# Delta ADS over TLS with a CA made now, rotating connections with GOAWAY every few seconds.
# Scenarios: initial sync, incremental add/update/remove, a malformed resource (NACK, the rest
# applied), a stream ended by the server (reconnect with initial_resource_versions and removals
# learnt from them), token rotation, a rejected token (the log names its file), authorization
# resources, a certificate for the wrong name, and servers that accept TCP and never answer
# (the setup is bounded: logged, backoff, retry). Each ends by checking the map writer's tables,
# the basic ones with real connections.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

VIP=10.96.77.10
SVC='{"service": {"name": "web", "namespace": "demo", "hostname": "web.demo.svc.cluster.local",
  "addresses": [{"network": "", "address": "'$VIP'"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}}'
pod() { # pod NAME [STATUS]: a workload of the service
	echo '{"workload": {"uid": "Kubernetes//Pod/demo/'$1'", "name": "'$1'", "namespace": "demo",
	  "addresses": ["'$KM_SUBNET.2${1#b}'"], "status": "'${2:-HEALTHY}'",
	  "services": {"demo/web.demo.svc.cluster.local": {}}}}'
}
set_state() { # set_state RESOURCE...: the fake istiod's whole Address state
	local IFS=,
	km_istiod send "{\"cmd\": \"set\", \"resources\": [$*]}" >/dev/null
}

trap 'km_env_cleanup' EXIT
km_env_setup kmx$$
km_pod_add client "$KM_SUBNET.10"
for b in b1 b2 b3; do
	km_pod_add "$b" "$KM_SUBNET.2${b#b}"
	km_backend_start "$b" 8080
done
for b in b1 b2 b3; do km_wait_listen "$b" 8080 || exit 1; done
km_make_pki
echo t1 >"$KM_DIR/token"
chmod 644 "$KM_DIR/token"
km_istiod_start --max-connection-age-ms 4000
set_state "$SVC" "$(pod b1)" "$(pod b2)" "$(pod b3)"
km_map_writer_start || exit 1
km_istiod send '{"cmd": "hold", "on": true}' >/dev/null # a slow istiod: no first response yet
km_agent_start_xds --xds-handshake-timeout 2 # streams live 4 s: the bound must end at SETTINGS
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null

# --- readiness waits for istiod's first whole answer in the tables, not just the link
ready() { "$KM_ROOT/build/bin/kmeshctl" --map-writer-socket "$KM_SOCKET" --xds-socket "$KM_AGENT_SOCKET" ready "$@"; }
km_istiod wait 'any(reqs(st, ADDRESS) for st in s["streams"])' >/dev/null
for _ in $(seq 1 50); do [ "$(km_agent_json 'd["map_writer"]["connected"]')" = true ] && break; sleep 0.1; done
sleep 0.5 # linked: the Sync BEGIN sent on linking is answered meanwhile
out=$(ready xds-agent 2>&1)
rc=$?
check "subscribed, linked, but istiod has not answered: not ready (kmeshctl ready exit 1, /ready 503)" \
	eval '[ $rc = 1 ] && grep -q "whole configuration is not yet in the tables" <<<"$out" &&
	      [ "$(km_metrics /ready)" = "not ready" ]'
km_istiod send '{"cmd": "hold", "on": false}' >/dev/null
check "... ready once the first response is applied" eval 'ready --wait 10 xds-agent >/dev/null && [ "$(km_metrics /ready)" = ready ]'

# --- initial sync, and what the agent told istiod
check "initial sync: 3 endpoints" km_wait_rows endpoint "^endpoint" 3
out=$(km_connect client $VIP 80 --count 150)
check "a VIP connection is balanced over the 3 pods (each 20..80 of 150)" \
	eval 'within $(count_of b1 <<<"$out") 20 80 && within $(count_of b2 <<<"$out") 20 80 && within $(count_of b3 <<<"$out") 20 80'
check "node id is ztunnel~IP~pod.ns~ns.svc.cluster.local" km_istiod wait \
	'reqs(s["streams"][0], ADDRESS)[0]["node_id"] == "ztunnel~10.123.0.2~kmesh-abc.kmesh-system~kmesh-system.svc.cluster.local"'
check "node metadata: every value a string, INSTANCE_IPS and NAMESPACE set" km_istiod wait \
	'(lambda m, k: m["INSTANCE_IPS"] == "10.123.0.2" and m["NAMESPACE"] == "kmesh-system" and set(k.values()) == {"string_value"})(reqs(s["streams"][0], ADDRESS)[0]["metadata"], reqs(s["streams"][0], ADDRESS)[0]["metadata_kinds"])'
check "authorization: Bearer <token> and clusterid headers" km_istiod wait \
	's["streams"][0]["authorization"] == "Bearer t1" and s["streams"][0]["clusterid"] == "test-cluster"'
check "both types subscribed, first response ACKed" km_istiod wait \
	'any(r["nonce"] and "error" not in r for r in reqs(s["streams"][0], ADDRESS)) and len(reqs(s["streams"][0], AUTHZ)) >= 2'

# --- incremental changes
set_state "$SVC" "$(pod b1)" "$(pod b2)"
check "remove b3: 2 endpoints" km_wait_rows endpoint "^endpoint" 2
out=$(km_connect client $VIP 80 --count 60)
check "no connection reaches the removed pod" test "$(count_of b3 <<<"$out")" -eq 0
set_state "$SVC" "$(pod b1)" "$(pod b2 UNHEALTHY)" "$(pod b3)"
check "b3 back, b2 unhealthy: 2 endpoints" km_wait_rows endpoint "^endpoint" 2
out=$(km_connect client $VIP 80 --count 60)
check "the unhealthy pod gets nothing, b3 gets traffic again" \
	eval '[ $(count_of b2 <<<"$out") -eq 0 ] && [ $(count_of b3 <<<"$out") -gt 0 ]'

# --- a pod IP taken over: the new pod listed and the old one removed in the same response
holder_named() { # holder_named ADDR: the pod-IP frontend row of ADDR names the backend holding it
	local be fe
	be=$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table backend | awk -v a="$1" '$3 == a {print $2}')
	fe=$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table frontend |
		awk -v a="$1" '$2 == a && $4 == 0 {print $10}')
	[ -n "$be" ] && [ "$fe" = "$be" ]
}
wait_holder_named() {
	for _ in $(seq 1 50); do holder_named "$1" && return 0; sleep 0.1; done
	"$KM_TESTCTL" dump --socket "$KM_SOCKET" --table frontend >&2
	return 1
}
# (pod-IP rows exist for workloads with a waypoint of their own: these two have one)
waypointed() { # waypointed NAME: a workload on b3's address with a workload waypoint
	echo '{"workload": {"uid": "Kubernetes//Pod/demo/'$1'", "name": "'$1'", "namespace": "demo",
	  "addresses": ["'$KM_SUBNET.23'"], "services": {"demo/web.demo.svc.cluster.local": {}},
	  "waypoint": {"address": {"address": "'$KM_SUBNET.99'"}, "hboneMtlsPort": 15008}}}'
}
sockops_pinned() { [ -e "$KM_DIR/bpffs/kmesh/links/sockops" ]; }
check "no sockops program while no row names a waypoint (nothing needs it)" eval '! sockops_pinned'
set_state "$SVC" "$(pod b1)" "$(pod b2)" "$(waypointed b3)"
check "a workload with its own waypoint has a pod-IP frontend row" wait_holder_named "$KM_SUBNET.23"
check "... and sockops was attached before that row (the waypoint's TLV needs it)" \
	eval 'sockops_pinned && grep -q "sockops attached: needed by waypoints" "$KM_DIR/map-writer.log"'
set_state "$SVC" "$(pod b1)" "$(pod b2)" "$(waypointed b3-new)"
check "b3's IP taken over by b3-new in one response: the frontend row names b3-new" \
	wait_holder_named "$KM_SUBNET.23"

set_state "$SVC" "$(pod b1)" "$(pod b2)" "$(pod b3)" '{"bad_workload_uid": "Kubernetes//Pod/demo/bad"}'
check "the good part of the response is applied: 3 endpoints" km_wait_rows endpoint "^endpoint" 3
check "the response is NACKed with error_detail naming the bad resource" km_istiod wait \
	'any("Kubernetes//Pod/demo/bad" in r.get("error", "") and "4 or 16 bytes" in r["error"] for st in s["streams"] for r in reqs(st, ADDRESS))'
check "the bad workload is not in the tables (3 backends)" km_wait_rows backend "^backend" 3

# --- the server ends the stream: reconnect with initial_resource_versions, removals learnt
streams=$(km_istiod query 'len(s["streams"])')
km_istiod send '{"cmd": "end-stream", "code": 14, "message": "test says reconnect"}' >/dev/null
set_state "$SVC" "$(pod b2)" "$(pod b3)" # b1 goes while the agent is away
check "the agent reconnects" km_istiod wait "len(s['streams']) > $streams and last(s)['open']"
check "the new stream carries initial_resource_versions with versions held" km_istiod wait \
	'len(reqs(last(s), ADDRESS)[0]["initial"]) >= 4 and all(v for v in reqs(last(s), ADDRESS)[0]["initial"].values())'
check "the bad resource's version was never recorded" km_istiod wait \
	'"Kubernetes//Pod/demo/bad" not in reqs(last(s), ADDRESS)[0]["initial"]' 1
check "b1, removed while away, is removed (2 endpoints)" km_wait_rows endpoint "^endpoint" 2
out=$(km_connect client $VIP 80 --count 60)
check "no connection reaches b1" test "$(count_of b1 <<<"$out")" -eq 0

# --- GOAWAY rotation (max connection age 4 s) and token rotation
echo t2 >"$KM_DIR/token"
streams=$(km_istiod query 'len(s["streams"])')
check "connection-age GOAWAY: a new stream within 8 s" km_istiod wait "len(s['streams']) > $streams" 8
check "the agent logged the GOAWAY" grep -q "GOAWAY" "$KM_DIR/xds-agent.log"
check "the new stream uses the rotated token" km_istiod wait 'last(s)["authorization"] == "Bearer t2"' 8
out=$(km_connect client $VIP 80 --count 40)
check "traffic still flows across rotations" test "$(($(count_of b2 <<<"$out") + $(count_of b3 <<<"$out")))" -eq 40

# --- istiod rejects the token (grpc-status 16): the log says which file it came from
km_istiod send '{"cmd": "require-token", "token": "t3"}' >/dev/null
km_istiod send '{"cmd": "end-stream", "code": 0}' >/dev/null
check "istiod rejects the token" km_istiod wait 's["rejected"] >= 1' 5
rejected_logged() { grep -q "istiod rejected the token read from $KM_DIR/token (grpc-status 16 UNAUTHENTICATED" "$KM_DIR/xds-agent.log"; }
check "the agent's log names the token file" eval 'for _ in $(seq 1 20); do rejected_logged && break; sleep 0.1; done; rejected_logged'
streams=$(km_istiod query 'len(s["streams"])')
echo t3 >"$KM_DIR/token"
check "with the file fixed, the agent gets back in at a reconnect" km_istiod wait \
	"len(s['streams']) > $streams and last(s)['authorization'] == 'Bearer t3' and last(s)['open']" 10
km_istiod send '{"cmd": "require-token", "token": null}' >/dev/null

# --- authorization resources are decoded, kept and ACKed
km_istiod send '{"cmd": "set-authz", "policies": [{"name": "deny-all", "namespace": "demo", "scope": "NAMESPACE",
  "action": "DENY", "rules": [{"clauses": [{"matches": [{"destinationPorts": [80], "sourceIps": [{"address": "10.0.0.0", "length": 8}]}]}]}]}]}' >/dev/null
check "an Authorization response is ACKed" km_istiod wait \
	'sum(1 for r in reqs(last(s), AUTHZ) if r["nonce"] and "error" not in r) >= 2'

# --- the agent's admin socket shows its model and the istiod connection
check "admin dump: connected to istiod, nonces and NACKs counted" \
	test "$(km_agent_json 'd["istiod"]["connected"] and d["istiod"]["address"]["last_nonce"] != "" and d["istiod"]["address"]["nacks"] >= 1 and d["istiod"]["connects"] >= 3')" = true
check "admin dump: the model (1 service, 2 healthy endpoints, 1 policy)" \
	test "$(km_agent_json '[d["model"]["services"], d["model"]["endpoints"], d["model"]["policies"]]')" = "[1, 2, 1]"
check "admin dump: the map writer link" test "$(km_agent_json 'd["map_writer"]["connected"]')" = true
# the wolfSSL Debian ships has no AES-NI: its AES-GCM decrypted a push at 156 MB/s, ChaCha20 at 390
check "TLS 1.3 with ChaCha20-Poly1305, which the agent offers first" \
	grep -q "connected to 127.0.0.1:$KM_ISTIOD_PORT (TLSv1.3 TLS13-CHACHA20-POLY1305-SHA256, ALPN h2" "$KM_DIR/xds-agent.log"
setpriv --reuid=65533 --regid=65533 --clear-groups "$KM_TESTCTL" agent-dump --socket "$KM_DIR/run/xds-agent.sock" >/dev/null 2>&1
check "another unprivileged uid cannot use the agent's admin socket" test $? -ne 0

# --- a certificate for another name is refused
km_agent_run "$KM_DIR/wrong-name.log" --xds-address "127.0.0.1:$KM_ISTIOD_PORT" \
	--xds-ca-file "$KM_DIR/pki/ca.pem" --xds-server-name istiod.other.svc --xds-token-file ""
wrong=$!
sleep 1.5
kill "$wrong" 2>/dev/null
check "TLS to a certificate for another name fails with a clear error" \
	grep -q "certificate is not for this name" "$KM_DIR/wrong-name.log"

# --- a certificate that names istiod only in its common name (no SAN) is refused (RFC 6125)
d=$KM_DIR/pki
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=istiod.istio-system.svc" \
	-keyout "$d/nosan.key" -out "$d/nosan.csr" 2>/dev/null
printf 'extendedKeyUsage=serverAuth\n' >"$d/nosan.ext"
openssl x509 -req -in "$d/nosan.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 1 \
	-extfile "$d/nosan.ext" -out "$d/nosan.pem" 2>/dev/null
NOSAN_PORT=$("$KM_PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
openssl s_server -accept "127.0.0.1:$NOSAN_PORT" -cert "$d/nosan.pem" -key "$d/nosan.key" -alpn h2 \
	-quiet </dev/null >/dev/null 2>&1 &
KM_PIDS+=($!)
sleep 0.5
km_agent_run "$KM_DIR/nosan.log" --xds-address "127.0.0.1:$NOSAN_PORT" \
	--xds-ca-file "$d/ca.pem" --xds-server-name istiod.istio-system.svc --xds-token-file ""
nosan=$!
sleep 1.5
kill "$nosan" 2>/dev/null
check "TLS to a certificate with the name only in its CN (no SAN) fails, saying so" \
	grep -q "certificate has no DNS subjectAltName" "$KM_DIR/nosan.log"

# --- a server that accepts TCP and never answers: the setup is bounded, then backoff and retry
silent() { # silent NAME: a silent_tcp.py listener; sets PORT
	rm -f "$KM_DIR/$1.port"
	"$KM_PY" "$KM_ROOT/tests/lib/silent_tcp.py" "$KM_DIR/$1.port" "$KM_DIR/$1.accepts" &
	KM_PIDS+=($!)
	PORT=$(km_port_file "$KM_DIR/$1.port")
}
silent stuck-tls
km_agent_run "$KM_DIR/stuck-tls.log" --xds-address "127.0.0.1:$PORT" --xds-handshake-timeout 1 \
	--xds-ca-file "$KM_DIR/pki/ca.pem" --xds-token-file ""
stuck_tls=$! stuck_tls_port=$PORT
silent stuck-h2
km_agent_run "$KM_DIR/stuck-h2.log" --xds-address "127.0.0.1:$PORT" --xds-handshake-timeout 1 \
	--xds-insecure --xds-token-file ""
stuck_h2=$! stuck_h2_port=$PORT
sleep 4
kill "$stuck_tls" "$stuck_h2" 2>/dev/null
accepts() { wc -l <"$KM_DIR/$1.accepts" 2>/dev/null || echo 0; }
check "a server silent after TCP accept: the TLS handshake times out after 1 s, and the agent reconnects ($(accepts stuck-tls) connections in 4 s)" \
	eval '[ "$(accepts stuck-tls)" -ge 3 ] &&
	      grep -q "127.0.0.1:$stuck_tls_port: the TLS handshake did not complete within 1000 ms" "$KM_DIR/stuck-tls.log"'
check "... and without TLS, the HTTP/2 setup times out the same way ($(accepts stuck-h2) connections)" \
	eval '[ "$(accepts stuck-h2)" -ge 3 ] &&
	      grep -q "127.0.0.1:$stuck_h2_port: the HTTP/2 setup (no SETTINGS from the server) did not complete within 1000 ms" "$KM_DIR/stuck-h2.log"'
check "connections that istiod answers never hit the bound (streams outlive its 2 s)" \
	eval '! grep -q "did not complete within" "$KM_DIR/xds-agent.log"'
check "the handshake timeout is in --help" says "--xds-handshake-timeout SECONDS" "$KM_BIN/kmesh-xds-agent" --help

# --- the waypoint went long ago: the next full sync (a restarted agent) takes sockops off the path
kill "$KM_AGENT_PID"
wait "$KM_AGENT_PID" 2>/dev/null
km_agent_start_xds --xds-handshake-timeout 2
check "a full sync naming no waypoint detaches sockops" \
	eval 'for _ in $(seq 1 100); do ! sockops_pinned && break; sleep 0.1; done; ! sockops_pinned && grep -q "sockops detached" "$KM_DIR/map-writer.log"'

[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer xds-agent istiod
[ -n "${KM_SHOW_LOGS:-}" ] && km_dump_logs map-writer xds-agent istiod
km_check_summary xds
