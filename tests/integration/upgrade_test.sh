#!/usr/bin/env bash
# upgrade_test.sh — a map writer whose table layout changed takes over a running data plane: the
# test's "next" build (make next-map-writer: one more backend field, layout 0x10005) replaces the
# current one while a client opens 300 connections/s through a VIP. The pinned backend table is
# migrated into a map of the new layout (entries converted, not dropped), the new programs are
# swapped into the links in place, and no connection fails.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

S=$KM_SUBNET
NEXT_BIN=$KM_ROOT/build/next/bin
trap 'km_env_cleanup' EXIT
km_env_setup kmu$$
km_pod_add client "$S.10"
for b in b1 b2; do km_pod_add "$b" "$S.2${b#b}"; km_backend_start "$b" 8080; done
for b in b1 b2; do km_wait_listen "$b" 8080 || exit 1; done
cat <<JSON | km_write_config
{"resources": [
 {"service": {"name": "web", "namespace": "t", "hostname": "web.t", "addresses": [{"address": "10.96.8.1"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}]}},
 {"workload": {"uid": "Kubernetes//Pod/t/b1", "addresses": ["$S.21"], "services": {"t/web.t": {}}}},
 {"workload": {"uid": "Kubernetes//Pod/t/b2", "addresses": ["$S.22"], "services": {"t/web.t": {}}}}
]}
JSON
km_map_writer_start || exit 1
km_agent_start
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
check "converged: 2 endpoints" km_wait_rows endpoint "^endpoint" 2
value_size() { bpftool map show pinned "$KM_DIR/bpffs/kmesh/maps/km_backend" | grep -o 'value [0-9]*B'; }
before=$(value_size)

km_steady_start client 10.96.8.1 80
sleep 1
kill -9 "$KM_MW_PID" # the old version goes away without detaching anything
wait "$KM_MW_PID" 2>/dev/null
KM_BIN=$NEXT_BIN km_map_writer_start || exit 1
check "the next build migrated the 2 backend rows into its layout" \
	grep -q "migrated 2 entries of km_backend from layout 5 to 65541" "$KM_DIR/map-writer.log"
check "km_backend is now a map of the new layout ($before -> $(value_size))" \
	test "$(value_size)" = "value $((${before//[^0-9]/} + 4))B"
check "the map writer's dump counts the migrated entries" \
	km_wait_rows frontend "^stats .*migrated_entries 2 " 1
check "the agent reconnects and its rows stay (2 endpoints, 2 backends)" \
	eval 'km_wait_rows endpoint "^endpoint" 2 && km_wait_rows backend "^backend" 2'
sleep 1
km_steady_stop
ok=$KM_STEADY_OK failed=$KM_STEADY_FAILED seconds=$KM_STEADY_SECONDS
check "no connection failed during the upgrade ($ok ok, $failed failed)" \
	eval "[ $failed -eq 0 ] && [ $ok -ge 200 ]"
out=$(km_connect client 10.96.8.1 80 --count 40)
check "both backends still serve through the migrated tables" \
	eval "[ $(count_of b1 <<<"$out") -gt 5 ] && [ $(count_of b2 <<<"$out") -gt 5 ]"
kill -9 "$KM_MW_PID"
wait "$KM_MW_PID" 2>/dev/null
km_map_writer_start 2>/dev/null
check "going back to an older layout is refused with a clear message" \
	grep -q "have table layout 65541; this build (layout 5) cannot migrate them" "$KM_DIR/map-writer.log"

km_check_summary upgrade
