#!/usr/bin/env bash
# xds_resync_scale_test.sh — a reconnect to istiod while the agent holds 110k resources (100k
# workloads, 10k services): their initial_resource_versions would make a first request of ~6 MB,
# over the 4 MiB istiod (and the fake, like it) accepts. The agent must keep that request under
# its limit, take the whole state istiod then sends, and remove only what istiod no longer has,
# with no connection to a live service failing and no unchanged row rewritten. Prints the
# reconnect's duration and the agent's peak memory.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

WORKLOADS=100000 SERVICES=10000
VIP=10.96.77.10 # the synthetic services' VIPs stop at 10.96.39.x
SVC='{"service": {"name": "web", "namespace": "demo", "hostname": "web.demo.svc.cluster.local",
  "addresses": [{"network": "", "address": "'$VIP'"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}}'
pod() { # pod NAME: a workload of the service
	echo '{"workload": {"uid": "Kubernetes//Pod/demo/'$1'", "name": "'$1'", "namespace": "demo",
	  "addresses": ["'$KM_SUBNET.2${1#b}'"], "services": {"demo/web.demo.svc.cluster.local": {}}}}'
}
dump() { KM_DUMP_ITEMS=1 km_agent_json "$1" 2>/dev/null; }
settled_ops() { # settled_ops: the ops the map writer applied, once two looks 0.5 s apart agree
	local a b
	b=$(dump 'd["map_writer"]["ops_applied"]')
	for _ in $(seq 1 60); do
		sleep 0.5
		a=$b
		b=$(dump 'd["map_writer"]["ops_applied"]')
		[ "$a" = "$b" ] && break
	done
	echo "$b"
}

trap 'km_env_cleanup' EXIT
km_env_setup kxs$$
km_pod_add client "$KM_SUBNET.10"
for b in b1 b2 b3; do
	km_pod_add "$b" "$KM_SUBNET.2${b#b}"
	km_backend_start "$b" 8080
done
for b in b1 b2 b3; do km_wait_listen "$b" 8080 || exit 1; done
km_make_pki
echo t1 >"$KM_DIR/token"
chmod 644 "$KM_DIR/token"
km_istiod_start # refuses requests over 4 MiB, as istiod does
km_istiod send "{\"cmd\": \"prepare\", \"workloads\": $WORKLOADS, \"services\": $SERVICES}" >/dev/null
km_map_writer_start --max-frontends $((WORKLOADS + SERVICES + 64)) --max-endpoints $((WORKLOADS + 64)) \
	--max-backends $((WORKLOADS + 64)) --max-services $((SERVICES + 64)) \
	--max-authz-addresses $((WORKLOADS + 64)) || exit 1
km_agent_start_xds
km_wait_agent 'd["istiod"]["connected"] and d["istiod"]["address"]["synced"]' 10 || exit 1
km_istiod send '{"cmd": "push-prepared"}' >/dev/null
km_istiod send "{\"cmd\": \"add\", \"resources\": [$SVC, $(pod b1), $(pod b2), $(pod b3)]}" >/dev/null
check "the agent holds the whole mesh: $((WORKLOADS + 3)) workloads, $((SERVICES + 1)) services" \
	km_wait_agent "d['model']['workloads'] == $((WORKLOADS + 3)) and d['model']['services'] == $((SERVICES + 1)) and d['istiod']['address']['versions_held'] == $((WORKLOADS + SERVICES + 4))" 60
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
out=$(km_connect client $VIP 80 --count 60)
check "the live service reaches its 3 pods" \
	eval '[ $(count_of b1 <<<"$out") -gt 0 ] && [ $(count_of b2 <<<"$out") -gt 0 ] && [ $(count_of b3 <<<"$out") -gt 0 ]'
ops_before=$(settled_ops)
streams=$(km_istiod query 'len(s["streams"])')

# While the agent is away, istiod loses b3, 1000 workloads and 10 services.
gone='"Kubernetes//Pod/demo/b3"'
for i in $(seq 0 999); do gone+=",\"Kubernetes//Pod/bench/w$i\""; done
for i in $(seq 0 9); do gone+=",\"bench/s$i.bench\""; done
km_steady_start client $VIP 80
sleep 0.5
hwm_mb() { awk '/^VmHWM:/ {printf "%.1f MB", $2 / 1024}' "/proc/$KM_AGENT_PID/status"; }
hwm_sync=$(hwm_mb)
echo 5 >"/proc/$KM_AGENT_PID/clear_refs" # the peak from here on is the reconnect's
t0=$EPOCHREALTIME
km_istiod send "{\"cmd\": \"drop\", \"names\": [$gone]}" >/dev/null
km_istiod send '{"cmd": "end-stream", "code": 0}' >/dev/null # as at a connection-age rotation

check "the agent reconnects and gets its first Address response within 30 s" km_istiod wait \
	"len(s['streams']) > $streams and any(r['nonce'] for r in reqs(last(s), ADDRESS))" 30
check "... and has removed exactly what istiod no longer has" \
	km_wait_agent "d['model']['workloads'] == $((WORKLOADS + 3 - 1001)) and d['model']['services'] == $((SERVICES + 1 - 10)) and d['istiod']['address']['synced'] and d['map_writer']['last_synced_unix_us'] > 0" 30
t1=$EPOCHREALTIME
sleep 0.5
km_steady_stop
check "no connection to the live service failed during the reconnect ($KM_STEADY_OK ok)" \
	eval '[ "$KM_STEADY_FAILED" = 0 ] && [ "$KM_STEADY_OK" -gt 0 ]'
check "the first request on the new stream fits istiod's 4 MiB" km_istiod wait \
	'0 < reqs(last(s), ADDRESS)[0]["bytes"] <= 4 << 20' 1
check "... because it named no versions (too many to fit)" km_istiod wait \
	'reqs(last(s), ADDRESS)[0]["initial_count"] == 0' 1
check "istiod never refused a request as too large (grpc-status 8)" \
	eval '! grep -q "grpc-status 8" "$KM_DIR/xds-agent.log"'
check "the agent logged that it withheld its versions, and what it removed" \
	eval 'grep -q "too many to name" "$KM_DIR/xds-agent.log" && grep -q "removed 1011 workloads and services" "$KM_DIR/xds-agent.log"'
ops=$(($(settled_ops) - ops_before))
check "unchanged resources were not rewritten: $ops table ops for the reconnect (< 10000)" test "$ops" -lt 10000
out=$(km_connect client $VIP 80 --count 60)
check "the live service now reaches b1 and b2 only" \
	eval '[ $(count_of b3 <<<"$out") -eq 0 ] && [ $(count_of b1 <<<"$out") -gt 0 ] && [ $(count_of b2 <<<"$out") -gt 0 ]'
km_log "reconnect at $((WORKLOADS + SERVICES)) resources: end of stream -> whole state applied and swept in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s; agent peak RSS during it $(hwm_mb) (through the first full sync: $hwm_sync)"

[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer xds-agent istiod
km_check_summary xds_resync_scale
