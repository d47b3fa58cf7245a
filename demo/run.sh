#!/usr/bin/env bash
# run.sh — `make demo`: a guided tour of the whole product on this machine, from demo/mesh.json.
# Pods are network namespaces on a bridge; the real kmesh-map-writer loads the BPF programs into a
# private sub-cgroup, the real kmesh-xds-agent (uid 65534, no capabilities) reads the file, and
# kmeshctl drives them. Each step says what it shows, then shows it:
#   1. load balancing in the kernel, across namespaces, for enrolled pods only
#   2. a waypoint: the original destination travels as a TLV ahead of the client's bytes
#   3. an authorization policy denying a connection (injected with kmeshctl), then removed
#   4. the node's metrics and access log, scraped over HTTP
#   5. each process killed (-9) and restarted under a steady stream of new connections
# Everything is removed at the end. Needs root.
set -euo pipefail
source "$(dirname "$0")/../tests/lib/mesh-env.sh"
[ "$(id -u)" -eq 0 ] || { echo "make demo needs root (namespaces, cgroups, BPF)" >&2; exit 1; }

WEB=10.96.0.10
REVIEWS=10.96.0.20
CTL=$KM_ROOT/build/bin/kmeshctl
ctl() { "$CTL" --map-writer-socket "$KM_SOCKET" --xds-socket "$KM_AGENT_SOCKET" "$@"; }
step() { echo; echo "=== $*"; }
say() { echo "    $*"; }
bars() { # the "COUNT NAME" lines of km_connect as a bar chart
	awk '{printf "    %-16s %4d  ", $2, $1; for (i = 0; i < $1 / 5; i++) printf "#"; print ""}'
}
enroll() { "$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path "$1")" --pod "$2" >/dev/null; }

trap km_env_cleanup EXIT
km_env_setup kmdemo$$
km_pod_add client 10.123.0.10
km_pod_add outsider 10.123.0.11
for p in web-a:21 web-b:22 web-c:23 reviews-a:24; do
	km_pod_add "${p%:*}" "10.123.0.${p#*:}"
	km_backend_start "${p%:*}" 8080
done
km_pod_add waypoint 10.123.0.31
km_server_start waypoint tlv_server.py waypoint 15019 hello
for p in web-a web-b web-c reviews-a; do km_wait_listen "$p" 8080; done
km_wait_listen waypoint 15019
km_write_config <"$KM_ROOT/demo/mesh.json"

step "The processes"
km_map_writer_start
km_agent_start
say "kmesh-map-writer: the only process with CAP_BPF; programs attached to $KM_CGROUP"
say "kmesh-xds-agent: uid $KM_NOBODY, no capabilities, following $KM_CONFIG"
ctl ready --wait 10 | sed 's/^/    /'
enroll client shop/client
for p in web-a web-b web-c reviews-a waypoint; do enroll "$p" "catalog/$p"; done
say "pods enrolled through the map writer's socket (the CNI plugin's job in a cluster):"
say "client (shop), web-a web-b reviews-a waypoint (catalog), web-c (catalog-canary); not: outsider"
km_wait_rows endpoint "^endpoint" 5

step "1. Load balancing in the kernel, across namespaces"
say "Service web.catalog ($WEB:80) has web-a and web-b in namespace catalog and web-c in"
say "catalog-canary. connect() from pod 'client' is rewritten by cgroup/connect4 to one of them:"
km_connect client $WEB 80 --count 300 | bars
say "A pod outside the mesh gets no rewrite: its connection to the VIP goes nowhere:"
{ km_connect outsider $WEB 80 --count 1 --timeout 1 || true; } | sed 's/^/    /'

step "2. A waypoint, with the original destination as a TLV"
say "Service reviews.catalog ($REVIEWS:80) is behind waypoint.catalog: connections go to the"
say "waypoint pod, and sk_msg puts the original destination ahead of the client's first bytes."
say "The waypoint answers with the hex of what came before the client's text:"
answer=$(km_connect client $REVIEWS 80 --count 1 --send hello)
echo "    $answer"
hex=${answer##*:}
/usr/bin/python3 - "$hex" <<'PY'
import ipaddress, sys
b = bytes.fromhex(sys.argv[1])
n = int.from_bytes(b[1:5], "big")
addr = ipaddress.ip_address(b[5:5 + n - 2])
port = int.from_bytes(b[5 + n - 2:5 + n], "big")
print("    decoded: type 0x%02x, length %d, original destination %s:%d, end marker 0x%02x"
      % (b[0], n, addr, port, b[5 + n]))
PY

step "3. An authorization policy, decided before the connection exists"
say "kmeshctl injects a DENY policy (as istiod would send it): namespace catalog-canary takes"
say "nothing from namespace shop. The server pod's sk_lookup program gives a denied SYN no"
say "socket, so the kernel answers it with a reset: connect() fails at once with ECONNREFUSED,"
say "and the server never sees the connection:"
ctl inject xds-agent - <<'JSON' | sed 's/^/    /'
{"resources": [{"authorization": {"name": "deny-shop", "namespace": "catalog-canary",
  "scope": "NAMESPACE", "action": "DENY",
  "rules": [{"clauses": [{"matches": [{"namespaces": [{"exact": "shop"}]}]}]}]}}]}
JSON
sleep 1
say "client -> web-c (10.123.0.23:8080, catalog-canary):"
{ km_connect client 10.123.0.23 8080 --count 3 --timeout 1 || true; } | sed 's/^/      /'
say "client -> web-a (10.123.0.21:8080, catalog):"
{ km_connect client 10.123.0.21 8080 --count 3 --timeout 1 || true; } | sed 's/^/      /'
ctl inject xds-agent - <<<'{"removedPolicies": ["catalog-canary/deny-shop"]}' >/dev/null
sleep 1
say "policy removed; client -> web-c again:"
{ km_connect client 10.123.0.23 8080 --count 3 --timeout 1 || true; } | sed 's/^/      /'

step "4. Metrics and the access log"
say "sockops reports each connection; the agent names and counts them as Istio does, and serves"
say "the node's /metrics (with the map writer's own). A few of the series:"
ctl accesslog enable >/dev/null
km_connect client $WEB 80 --count 2 >/dev/null
sleep 1
page=$(km_metrics)
grep '^istio_tcp_connections_opened_total{reporter="source"' <<<"$page" | head -3 |
	sed -E 's/,[a-z_]*(cluster|protocol|flags|version|principal|app|canonical_revision|canonical_service|service_name|service_namespace|security_policy)="[^"]*"//g; s/^/    /' || true
grep -E '^kmesh_table_entries\{table="(frontend|endpoint)"' <<<"$page" | sed 's/^/    /' || true
say "the access log (the agent's stdout), the last two lines:"
grep '^accesslog: ' "$KM_DIR/xds-agent.log" | tail -2 | cut -c1-180 | sed 's/^/    /' || true

step "5. Restarts lose no connection"
say "pod 'client' opens new connections to $WEB:80 at 300/s while each process is killed -9"
say "and started again: the programs stay attached and the tables filled meanwhile."
km_steady_start client $WEB 80
sleep 1
kill -9 "$KM_MW_PID"; wait "$KM_MW_PID" 2>/dev/null || true
say "map writer killed; started again (it adopts the pinned maps and links)"
km_map_writer_start
sleep 1
kill -9 "$KM_AGENT_PID"; wait "$KM_AGENT_PID" 2>/dev/null || true
say "xDS agent killed; started again (it resyncs and sweeps only stale rows)"
km_agent_start
ctl ready --wait 10 >/dev/null
sleep 1
km_steady_stop
say "result: $KM_STEADY_OK connections, $KM_STEADY_FAILED failed"

echo
km_log "demo done; everything it made is removed now"
