#!/usr/bin/env bash
# tunnel_handoff_test.sh — the kernel's half of HBONE outbound (issue 49, items 1 and 2): which
# connections go to the tunnel, and what the tunnel learns of them, with a stand-in listener
# (tests/lib/origin_listener.py) where kmesh-tunnel listens, asking as the tunnel asks:
#   - a workload with tunnel_protocol HBONE on another node: by pod IP and through its service's
#     VIP, sent to the tunnel's address (the map writer's --dns-interface holds it), which reads
#     the original destination and the picked workload's address and target port;
#   - a workload with a waypoint of its own: to the tunnel too (waypoints over HBONE, the default
#     with the tunnel), or to the waypoint itself with --waypoint-protocol tlv;
#   - a NONE workload, an HBONE one on this node, an address outside the mesh: not sent to the
#     tunnel;
#   - the record is read once; a connection not sent by connect() (a pod dialling the listener
#     itself) has none; a process outside the tunnel's cgroup gets no answer;
#   - with the agent's --tunnel-address unset nothing is tunneled.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

trap 'km_env_cleanup' EXIT
km_env_setup kmh$$ >/dev/null
km_tunnel_cgroup_make
TADDR=169.254.20.15
km_map_writer_start --tunnel-cgroup "$KM_TUNNEL_CGROUP" --dns-interface kmt$$ \
	--tunnel-address $TADDR || exit 1
km_pod_add client "$KM_SUBNET.10"
ip -n "$KM_PREFIX-client" route add default via "$KM_SUBNET.1"
km_pod_add local "$KM_SUBNET.20"
km_backend_start local 8080
km_wait_listen local 8080 || exit 1
cat <<JSON | km_write_config
{"resources": [
 {"service": {"name": "far", "namespace": "t", "hostname": "far.t", "addresses": [{"address": "10.96.9.1"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}]}},
 {"workload": {"uid": "Kubernetes//Pod/t/r1", "addresses": ["10.124.0.50"], "node": "node-2",
   "tunnelProtocol": "HBONE", "services": {"t/far.t": {"ports": [{"servicePort": 80, "targetPort": 8443}]}}}},
 {"workload": {"uid": "Kubernetes//Pod/t/r2", "addresses": ["10.124.0.51"], "node": "node-2"}},
 {"workload": {"uid": "Kubernetes//Pod/t/local", "addresses": ["$KM_SUBNET.20"], "node": "node-1",
   "tunnelProtocol": "HBONE"}},
 {"workload": {"uid": "Kubernetes//Pod/t/wp", "addresses": ["10.124.0.52"], "node": "node-2",
   "tunnelProtocol": "HBONE", "waypoint": {"address": {"address": "10.124.0.60"}, "hboneMtlsPort": 15008}}}
]}
JSON
km_agent_start --tunnel-address $TADDR --node-name node-1
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
check "the agent's rows are written" km_wait_rows backend "^backend" 4
check "the map writer put the tunnel's address on its interface" \
	says "inet $TADDR/32" ip -n "$KM_NODE" addr show kmt$$
km_in_tunnel_cgroup "$KM_PY" "$KM_ROOT/tests/lib/origin_listener.py" $TADDR --twice \
	>"$KM_DIR/origin.out" 2>&1 &
KM_PIDS+=($!)
for _ in $(seq 1 40); do grep -q listening "$KM_DIR/origin.out" && break; sleep 0.05; done

out=$(km_connect client 10.124.0.50 8080)
check "an HBONE workload on another node, by pod IP: to the tunnel, which reads where it was for ($out)" \
	eval '[ "$out" = "1 orig 10.124.0.50:8080 via 10.124.0.50:8080; again: error ENOPROTOOPT" ]'
out=$(km_connect client 10.96.9.1 80)
check "... through its service's VIP: the VIP:port, and the workload with its own target port ($out)" \
	eval '[ "$out" = "1 orig 10.96.9.1:80 via 10.124.0.50:8443; again: error ENOPROTOOPT" ]'
# (the node has no route to the other node's pods: what is not sent to the tunnel times out)
out=$(km_connect client 10.124.0.51 8080 --timeout 0.5)
check "a NONE workload: not to the tunnel ($out)" eval '[ "$out" = "1 error:TIMEOUT" ]'
out=$(km_connect client "$KM_SUBNET.20" 8080)
check "an HBONE workload on this node: straight to it ($out)" eval '[ "$out" = "1 local" ]'
out=$(km_connect client 10.124.0.52 8080)
check "a workload with a waypoint of its own: over HBONE through the tunnel, which asks the agent for the waypoint ($out)" \
	eval '[ "$out" = "1 orig 10.124.0.52:8080 via 10.124.0.52:8080; again: error ENOPROTOOPT" ]'
out=$(km_connect client $TADDR 15001)
check "a pod dialling the tunnel's listener itself: no record ($out)" \
	eval '[ "$out" = "1 error ENOPROTOOPT; again: error ENOPROTOOPT" ]'
check "the stand-in saw the pod's own address as the peer of each (4)" \
	eval '[ "$(grep -c "^$KM_SUBNET.10:" "$KM_DIR/origin.out")" = 4 ]'

# outside the tunnel's cgroup, the same listener learns nothing
pkill -f "origin_listener.py $TADDR"
ip netns exec "$KM_NODE" "$KM_PY" "$KM_ROOT/tests/lib/origin_listener.py" $TADDR \
	>"$KM_DIR/origin2.out" 2>&1 &
KM_PIDS+=($!)
for _ in $(seq 1 40); do grep -q listening "$KM_DIR/origin2.out" && break; sleep 0.05; done
out=$(km_connect client 10.124.0.50 8080)
check "a listener outside the tunnel's cgroup gets no answer ($out)" \
	eval '[ "$out" = "1 error ENOPROTOOPT" ]'

# --waypoint-protocol tlv: waypoints as before (Kmesh's TLV on 15019), HBONE workloads still tunneled
kill -TERM "$KM_AGENT_PID"
wait "$KM_AGENT_PID" 2>/dev/null
km_agent_start --tunnel-address $TADDR --node-name node-1 --waypoint-protocol tlv
sleep 0.5
for _ in $(seq 1 20); do
	out=$(km_connect client 10.124.0.52 8080 --timeout 0.5)
	[ "$out" = "1 error:TIMEOUT" ] && break
done
check "--waypoint-protocol tlv: to the waypoint itself, not the tunnel ($out)" \
	eval '[ "$out" = "1 error:TIMEOUT" ]'

# the agent without --tunnel-address: nothing is tunneled
kill -TERM "$KM_AGENT_PID"
wait "$KM_AGENT_PID" 2>/dev/null
km_agent_start --node-name node-1
sleep 0.5
for _ in $(seq 1 20); do
	out=$(km_connect client 10.124.0.50 8080 --timeout 0.5)
	[ "$out" = "1 error:TIMEOUT" ] && break
done
check "the agent without --tunnel-address: r1's connections go straight to it ($out)" \
	eval '[ "$out" = "1 error:TIMEOUT" ]'

[ $KM_FAIL = 0 ] || km_dump_logs map-writer xds-agent
km_check_summary tunnel_handoff
