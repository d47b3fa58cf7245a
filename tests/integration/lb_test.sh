#!/usr/bin/env bash
# lb_test.sh — load-balancing semantics of the full workload model, with real connections
# through the BPF programs, configured from the file source: PASSTHROUGH leaves the destination
# alone, a workload's own target port (Workload.services) is used for it alone, FAILOVER by node
# keeps traffic on this node's pod and fails over when it goes unhealthy, STRICT by node refuses
# connections (ECONNREFUSED, not the VIP) once this node has no healthy pod, and a headless
# service gets endpoints but no frontend.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

write_config() { # write_config B1_STATUS
	cat <<JSON | km_write_config
{"resources": [
 {"service": {"name": "pass", "namespace": "t", "hostname": "pass.t", "addresses": [{"address": "10.96.5.1"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}], "loadBalancing": {"mode": "PASSTHROUGH"}}},
 {"service": {"name": "alt", "namespace": "t", "hostname": "alt.t", "addresses": [{"address": "10.96.5.2"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}]}},
 {"service": {"name": "near", "namespace": "t", "hostname": "near.t", "addresses": [{"address": "10.96.5.3"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}],
   "loadBalancing": {"mode": "FAILOVER", "routingPreference": ["NODE"]}}},
 {"service": {"name": "strict", "namespace": "t", "hostname": "strict.t", "addresses": [{"address": "10.96.5.4"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}],
   "loadBalancing": {"mode": "STRICT", "routingPreference": ["NODE"]}}},
 {"service": {"name": "headless", "namespace": "t", "hostname": "headless.t", "ports": [{"servicePort": 80}]}},
 {"workload": {"uid": "Kubernetes//Pod/t/b1", "addresses": ["$KM_SUBNET.21"], "node": "node-a", "status": "$1",
   "services": {"t/pass.t": {}, "t/near.t": {}, "t/headless.t": {}, "t/strict.t": {},
                "t/alt.t": {"ports": [{"servicePort": 80, "targetPort": 9090}]}}}},
 {"workload": {"uid": "Kubernetes//Pod/t/b2", "addresses": ["$KM_SUBNET.22"], "node": "node-b",
   "services": {"t/pass.t": {}, "t/near.t": {}, "t/alt.t": {}, "t/headless.t": {}, "t/strict.t": {}}}},
 {"workload": {"uid": "Kubernetes//Pod/t/b3", "addresses": ["$KM_SUBNET.23"], "node": "node-b",
   "services": {"t/pass.t": {}, "t/near.t": {}, "t/alt.t": {}, "t/headless.t": {}, "t/strict.t": {}}}}
]}
JSON
}

trap 'km_env_cleanup' EXIT
km_env_setup kml$$
km_pod_add client "$KM_SUBNET.10"
for b in b1 b2 b3; do
	km_pod_add "$b" "$KM_SUBNET.2${b#b}"
	km_backend_start "$b" 8080
done
km_backend_start b1 9090 # b1's second listener answers "b1" too; told apart by the port below
for b in b1 b2 b3; do km_wait_listen "$b" 8080 || exit 1; done
km_wait_listen b1 9090 || exit 1
write_config HEALTHY
km_map_writer_start || exit 1
km_agent_start --node-name node-a
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
# pass 3 + alt 3 + near 3 + strict 3 (+ headless 3) endpoints
check "all services converge (15 endpoints)" km_wait_rows endpoint "^endpoint" 15

out=$(km_connect client 10.96.5.1 80 --count 5)
check "PASSTHROUGH: the VIP is not rewritten" test "$(count_of error:ENETUNREACH <<<"$out")" -eq 5

check "b1's own target port for alt is an override row" km_wait_rows port_override "port 80 target 9090" 1
check "alt's frontend says to look overrides up" km_wait_rows frontend "10.96.5.2 port 80 .* flags 1" 1
# b1 listens on 9090 as well: connections through alt that land on b1 must have used 9090;
# stop its 8080 listener to tell them apart
ip netns exec "$KM_PREFIX-b1" ss -Htlnp "sport = :8080" | grep -o 'pid=[0-9]*' | cut -d= -f2 | xargs -r kill
out=$(km_connect client 10.96.5.2 80 --count 90)
check "alt: connections to b1 use its own port 9090 (none refused)" \
	eval '[ $(count_of b1 <<<"$out") -gt 10 ] && [ $(count_of error:ECONNREFUSED <<<"$out") -eq 0 ]'

km_backend_start b1 8080
km_wait_listen b1 8080
out=$(km_connect client 10.96.5.3 80 --count 40)
check "FAILOVER by node: all traffic to the pod on this node" test "$(count_of b1 <<<"$out")" -eq 40
out=$(km_connect client 10.96.5.4 80 --count 40)
check "STRICT by node: all traffic to the pod on this node" test "$(count_of b1 <<<"$out")" -eq 40
write_config UNHEALTHY
check "b1 unhealthy: its endpoints go" km_wait_rows endpoint "^endpoint" 10
out=$(km_connect client 10.96.5.3 80 --count 40)
check "FAILOVER: the other node's pods take over" \
	test "$(($(count_of b2 <<<"$out") + $(count_of b3 <<<"$out")))" -eq 40
out=$(km_connect client 10.96.5.4 80 --count 20)
check "STRICT with no pod on this node: refused (ECONNREFUSED), not sent elsewhere" \
	test "$(count_of error:ECONNREFUSED <<<"$out")" -eq 20
check "... and the 20 refusals are counted (kmesh_connections_refused_total, reason no_endpoint)" \
	eval 'for _ in $(seq 1 40); do km_metrics_has "^kmesh_connections_refused_total{reason=\"no_endpoint\"} 20$" && break; sleep 0.1; done
	      km_metrics_has "^kmesh_connections_refused_total{reason=\"no_endpoint\"} 20$" &&
	      km_metrics_has "^kmesh_connections_refused_total{reason=\"waypoint\"} 0$"'
check "headless service: endpoints but no frontend (4 VIP rows: pass, alt, near, strict)" \
	km_wait_rows frontend "kind service" 4

km_check_summary lb
