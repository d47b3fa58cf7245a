#!/usr/bin/env bash
# privileges_test.sh — the processes work with exactly the privileges the chart and the units
# give them, and not with less: the map writer as root with only BPF, PERFMON, NET_ADMIN and
# SYS_ADMIN (no CHOWN, no DAC_OVERRIDE) and the xDS agent's group as a supplementary group; the
# agent as 65534 with none; kmeshctl with the map writer's container's privileges reaching both.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

CTL=$KM_ROOT/build/bin/kmeshctl
MW_CAPS=-all,+bpf,+perfmon,+net_admin,+sys_admin
# as the chart's map-writer container: root, only these capabilities, the agent's gid as a group
as_mw() { setpriv --bounding-set=$MW_CAPS --inh-caps=-all --groups "$KM_NOBODY" "$@"; }
ctl() { as_mw "$CTL" --map-writer-socket "$KM_SOCKET" --xds-socket "$KM_AGENT_SOCKET" "$@"; }
cap_eff() { awk '/^CapEff/ {print $2}' "/proc/$1/status"; }

trap 'km_env_cleanup' EXIT
km_env_setup kmp$$
km_pod_add client "$KM_SUBNET.10"
km_pod_add b1 "$KM_SUBNET.21"
km_backend_start b1 8080
km_wait_listen b1 8080 || exit 1
cat <<JSON | km_write_config
{"resources": [
 {"service": {"name": "web", "namespace": "t", "hostname": "web.t", "addresses": [{"address": "10.96.9.1"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}]}},
 {"workload": {"uid": "Kubernetes//Pod/t/b1", "name": "b1", "namespace": "t", "addresses": ["$KM_SUBNET.21"],
   "services": {"t/web.t": {}}}}
]}
JSON

# without the group: root without CAP_CHOWN cannot give its socket to the agent's group
KM_MW_WRAP=(setpriv --bounding-set=$MW_CAPS --inh-caps=-all --clear-groups)
km_map_writer_start >/dev/null 2>&1
for _ in $(seq 1 50); do kill -0 "$KM_MW_PID" 2>/dev/null || break; sleep 0.1; done
check "the map writer without the agent's group: stops, saying why (the chart's supplementalGroups)" \
	eval '! kill -0 "$KM_MW_PID" 2>/dev/null && grep -q "cannot give .* to group $KM_NOBODY: without CAP_CHOWN a process may give a file only to a group it is in" "$KM_DIR/map-writer.log"'

mv "$KM_DIR/map-writer.log" "$KM_DIR/map-writer-nogroup.log"
KM_MW_WRAP=(setpriv --bounding-set=$MW_CAPS --inh-caps=-all --groups "$KM_NOBODY")
km_map_writer_start || { cat "$KM_DIR/map-writer.log"; exit 1; }
km_agent_start
check "the map writer runs with exactly BPF, PERFMON, NET_ADMIN and SYS_ADMIN" \
	test "$(cap_eff "$KM_MW_PID")" = 000000c000201000
check "... its socket belongs to the agent's group" test "$(stat -c %g "$KM_SOCKET")" = "$KM_NOBODY"
check "kmeshctl with the map writer's container's privileges: both ready" ctl ready --wait 10
check "... and reads the agent's state over its socket (mode 0660, the agent's group)" \
	eval 'ctl -o json dump xds | "$KM_PY" -c "import json, sys; sys.exit(0 if json.load(sys.stdin)[\"map_writer\"][\"connected\"] else 1)"'
out=$(setpriv --bounding-set=$MW_CAPS --inh-caps=-all --clear-groups "$CTL" --xds-socket "$KM_AGENT_SOCKET" ready xds-agent 2>&1)
check "... which it cannot without the group (no CAP_DAC_OVERRIDE)" grep -q "Permission denied" <<<"$out"
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
km_wait_rows endpoint "^endpoint" 1
check "the data plane works: the VIP is balanced to b1" eval '[ "$(km_connect client 10.96.9.1 80)" = "1 b1" ]'

km_check_summary privileges
