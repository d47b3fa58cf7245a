#!/usr/bin/env bash
# tunnel_nodes_test.sh — two nodes of this data plane on one machine (issue 49): each a whole
# set of processes (map writer, xDS agent, tunnel, CNI agent and the real CNI chain, its own
# bpffs, cgroups, network namespaces and fake istiod; one CA, one trust domain), linked by a veth
# as two nodes are by their network. Pods: c1 and s1 on node 1, c2 and s2 on node 2; both agents
# know all four as HBONE workloads (as istiod names pods whose node serves HBONE). Checked:
#   - c1 -> s2 and c2 -> s1 over HBONE: each side's tunnel with its own pod's certificate, the
#     destination's policies (STRICT, an ALLOW by principal) decided with the source's principal,
#     a port the policy does not allow reset; plaintext from outside the mesh denied;
#   - the rule between two nodes of this data plane (--hbone-over-ipsec): once node 1 exchanges
#     IPsec with node 2 (its pod CIDR in km_ipsec_cidr, as the IPsec agent writes it), c1 -> s2
#     stays on the kernel path (the tunnel sees nothing; node 2 decides by c1's address, which
#     IPsec authenticates), and with --hbone-over-ipsec hbone it is tunneled again.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"
source "$(dirname "$0")/../lib/tunnel-env.sh"

trap 'km_nodes_cleanup' EXIT
export KM_TUNNEL_OUTBOUND=169.254.20.15
KM_TUNNEL_ARGS="--hbone-outbound-connect-timeout-ms 1500"

km_node_switch 1
KM_NODE_NAME=node-1 KM_POD_SUBNET=10.125.0 km_tunnel_env_setup kmn1$$
PKI=$KM_DIR/pki
km_node_switch 2
KM_NODE_NAME=node-2 KM_POD_SUBNET=10.127.0 KM_PKI_FROM=$PKI km_tunnel_env_setup kmn2$$
N2_NS=$KM_NODE

km_node_switch 1
km_nodes_link "$KM_NODE" 10.125.0.0/24 "$N2_NS" 10.127.0.0/24

pod_up() { # pod_up NAME SERVER: an enrolled pod with a backend answering its name on 8080 and
	# 9090, once this node's tunnel serves its 15008 (SERVER: 1) and its identity's certificate
	# is in (for its connections out)
	pod_add "$1" mesh
	km_backend_start "$1" 8080
	km_backend_start "$1" 9090
	km_wait_listen "$1" 8080
	km_wait_listen "$1" 9090
	[ "$2" = 1 ] && for _ in $(seq 1 50); do
		grep -q "HBONE: listening on pod mesh/$1" "$KM_DIR/tunnel.log" && break
		sleep 0.1
	done
}
pod_up c1 0
pod_up s1 1
C1=$(ip_of c1)
S1=$(ip_of s1)
km_node_switch 2
pod_up c2 0
pod_up s2 1
C2=$(ip_of c2)
S2=$(ip_of s2)
km_log "node 1: c1 $C1, s1 $S1; node 2: c2 $C2, s2 $S2"

wl() { # wl NAME ADDR SA NODE [EXTRA]: a pod of this data plane, advertised as HBONE
	echo '{"workload": {"uid": "Kubernetes//Pod/mesh/'$1'", "name": "'$1'", "namespace": "mesh",
	  "serviceAccount": "'$3'", "workloadName": "'$1'-wl", "node": "'$4'", "tunnelProtocol": "HBONE",
	  "addresses": ["'$2'"]'${5:-}'}}'
}
MESH='{"resources": ['$(wl c1 "$C1" client node-1)', '$(wl s1 "$S1" server node-1)',
  '$(wl c2 "$C2" client node-2)',
  '$(wl s2 "$S2" server node-2 ', "services": {"mesh/web.mesh": {"ports": [{"servicePort": 80, "targetPort": 8080}]}}')',
  {"service": {"name": "web", "namespace": "mesh", "hostname": "web.mesh", "addresses": [{"address": "10.96.7.1"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}]}}]}'
POLICIES='{"resources": [{"authorization": {"name": "istio_converted_static_strict", "namespace": "istio-system",
  "scope": "GLOBAL", "action": "DENY", "rules": [{"clauses": [{"matches": [{"notPrincipals": [{"presence": {}}]}]}]}]}},
 {"authorization": {"name": "only-client", "namespace": "mesh", "scope": "NAMESPACE", "action": "ALLOW",
  "rules": [{"clauses": [{"matches": [{"principals": [{"exact": "cluster.local/ns/mesh/sa/client"}],
  "destinationPorts": [8080]}]}]}]}}]}'
policies() { # this node's agent gets STRICT and an ALLOW by principal (as istiod sends them)
	for _ in $(seq 1 50); do [ -S "$KM_DIR/run/xds-agent.sock" ] && break; sleep 0.1; done
	"$KM_ROOT/build/bin/kmeshctl" --xds-socket "$KM_DIR/run/xds-agent.sock" inject xds-agent - \
		>/dev/null <<<"$POLICIES"
}
for n in 1 2; do
	km_node_switch $n
	km_write_config <<<"$MESH"
	policies
	check "node $n: its agent holds the four pods and both policies" \
		eval 'km_wait_rows backend "^backend" 4 && km_wait_agent "d[\"authz\"][\"policies\"] == 2" 10'
	check "node $n: its certificates for the client identity (connections out) and the server's (in)" \
		eval 'wait_cert "$CLIENT_ID" "c and c[\"state\"] == \"valid\"" && wait_cert "$SERVER_ID" "c and c[\"state\"] == \"valid\""'
done

km_node_switch 1 # node 1's access log: the road of each connection, and why
"$KM_ROOT/build/bin/kmeshctl" --xds-socket "$KM_DIR/run/xds-agent.sock" accesslog enable >/dev/null
logged() { # logged DST ROUTE: node 1's agent logged c1's outbound close to DST with ROUTE
	km_node_switch 1
	grep -qE "^accesslog: .* close outbound src=$C1:[0-9]+ .*dst=$1 .* $2\$" "$KM_DIR/xds-agent.log"
}

streams() { # streams: this node's tunnel's "relayed out, streams in" so far
	sleep 1.2 # the metrics file
	echo "$(metric kmesh_tunnel_outbound_relayed_total) $(metric 'kmesh_tunnel_hbone_streams_total{result="all"}')"
}
counts() { km_node_switch 1; N1=$(streams); km_node_switch 2; N2=$(streams); }

counts
N1_0=$N1 N2_0=$N2
km_node_switch 1
out=$(km_connect c1 "$S2" 8080)
counts
check "c1 (node 1) -> s2 (node 2): over HBONE, out through node 1's tunnel, in through node 2's ($out; node 1 out/in $N1_0 -> $N1, node 2 $N2_0 -> $N2)" \
	eval '[ "$out" = "1 s2" ] && [ "${N1%% *}" = $((${N1_0%% *} + 1)) ] && [ "${N2#* }" = $((${N2_0#* } + 1)) ]'
km_node_switch 1
out=$(km_connect c1 10.96.7.1 80)
counts
check "... and through s2's service VIP ($out; node 1 out $N1)" \
	eval '[ "$out" = "1 s2" ] && [ "${N1%% *}" = $((${N1_0%% *} + 2)) ]'
check "... node 1's access log: tunneled, and why (route=hbone route.why=hbone_workload)" \
	eventually logged "$S2:8080" "route=hbone route.why=hbone_workload"
km_node_switch 1
out=$(km_connect c1 "$S2" 9090)
check "... to a port s2's policy allows no one: node 2's tunnel answers 401, c1's connection is reset ($out)" \
	eval '[ "$out" = "1 error:ECONNRESET" ]'
km_node_switch 2
check "... node 2 knew c1 by its certificate: its tunnel's refusal names c1's principal" \
	grep -q "HBONE from [a-z:/]*cluster.local/ns/mesh/sa/client: stream .* refused 401" "$KM_DIR/tunnel.log"
check "... and node 2 reports the allowed one as mutual TLS from c1 (reporter destination)" \
	eventually km_metrics_has '^istio_tcp_connections_opened_total{reporter="destination",source_workload="c1-wl",.*source_principal="spiffe://cluster.local/ns/mesh/sa/client",.*destination_workload="s2-wl",.*connection_security_policy="mutual_tls"} [1-9][0-9]*$'
out=$(km_connect c2 "$S1" 8080)
counts
check "c2 (node 2) -> s1 (node 1): the other way, the same road ($out; node 2 out $N2, node 1 in $N1)" \
	eval '[ "$out" = "1 s1" ] && [ "${N2%% *}" = 1 ] && [ "${N1#* }" = $((${N1_0#* } + 1)) ]'
out=$(ip netns exec "$KM_NODE" "$KM_PY" "$KM_ROOT/tests/lib/client.py" "$S2" 8080 --timeout 1 2>&1)
check "plaintext to s2 from node 2 itself (no principal): STRICT denies it ($out)" \
	eval '[ "${out#1 error:}" != "$out" ]'

# The rule between two of our nodes: node 1 now exchanges IPsec with node 2 (the row the IPsec
# agent writes for node 2's pod CIDR; XFRM itself is not part of this test)
km_node_switch 1
km_ipsec_cidr_row update 10.127.0.0/24
counts
N1_0=$N1 N2_0=$N2
km_node_switch 1
out=$(km_connect c1 "$S2" 8080)
counts
check "IPsec between the nodes (--hbone-over-ipsec kernel, the default): c1 -> s2 on the kernel path, no tunnel on either side ($out; node 1 $N1_0 -> $N1, node 2 $N2_0 -> $N2)" \
	eval '[ "$out" = "1 s2" ] && [ "$N1" = "$N1_0" ] && [ "$N2" = "$N2_0" ]'
km_node_switch 1
out=$(km_connect c1 "$S2" 9090 --timeout 1)
check "... node 2's kernel decides by c1's address: the port its policy does not allow is denied, not by a tunnel's reset ($out)" \
	eval '[ "$out" = "1 error:ECONNREFUSED" ] || [ "$out" = "1 error:TIMEOUT" ]'
out=$(km_connect c1 10.96.7.1 80)
counts
check "... through s2's service VIP too ($out; node 1 $N1_0 -> $N1)" \
	eval '[ "$out" = "1 s2" ] && [ "$N1" = "$N1_0" ]'
km_node_switch 1
out=$(km_connect c1 "$S1" 8080)
check "... and a pod of this node is unchanged ($out)" eval '[ "$out" = "1 s1" ]'
check "... node 1's access log: the kernel's path, because IPsec protects the pair (route=kernel route.why=ipsec), and same_node for s1" \
	eval 'eventually logged "$S2:8080" "route=kernel route.why=ipsec" && eventually logged "$S1:8080" "route=kernel route.why=same_node"'

kill -TERM "$KM_AGENT_PID"
wait "$KM_AGENT_PID" 2>/dev/null
rm -f "$KM_DIR/run/xds-agent.sock"
km_agent_start --node-name node-1 --tunnel-address "$KM_TUNNEL_OUTBOUND" --hbone-over-ipsec hbone
policies
check "node 1's agent again, with --hbone-over-ipsec hbone" \
	eval 'km_wait_agent "d[\"authz\"][\"policies\"] == 2" 10'
tunneled_again() { km_node_switch 1; [ "$(km_connect c1 "$S2" 8080)" = "1 s2" ] && counts && [ "${N1%% *}" -gt "${N1_0%% *}" ]; }
check "... c1 -> s2 over HBONE again, IPsec or not (node 1's tunnel relays it)" eventually tunneled_again

[ $KM_FAIL = 0 ] || for n in 1 2; do
	km_node_switch $n
	echo "==== node $n"
	km_dump_logs tunnel map-writer xds-agent
done
km_check_summary tunnel_nodes
