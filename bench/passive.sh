#!/usr/bin/env bash
# passive.sh — what the data plane adds to an enrolled pod's side of the connections it accepts
# (bench/passive_bench.c): connect() and bulk throughput from a client pod to a server in an
# enrolled pod, against a server in a pod that is not enrolled and one with the floors (reference
# programs), measured in the same run, and every program's time per connection and per packet. One ALLOW policy applies to
# the enrolled server and matches. ROUNDS, PER_ROUND, BULK_MB override. HBONE=on: the server's
# address is in km_hbone, as when the tunnel serves its 15008 (the only thing the tunnel changes
# in the kernel; bench/tunnel_kernel.sh compares). Prints markdown. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/lib/mesh-env.sh
ROUNDS=${ROUNDS:-20}
PER_ROUND=${PER_ROUND:-500}
BULK_MB=${BULK_MB:-256}
HBONE=${HBONE:-off}
cleanup() {
	[ -n "${plain:-}" ] && rmdir "$plain" 2>/dev/null
	[ -n "${ref:-}" ] && rmdir "$ref" 2>/dev/null
	km_env_cleanup
}
trap cleanup EXIT
km_env_setup kmv$$ >/dev/null
plain=$(dirname "$KM_CGROUP")/$KM_PREFIX-plain # a sibling: no kmesh program applies there
mkdir "$plain"
ref=$(dirname "$KM_CGROUP")/$KM_PREFIX-ref # a sibling with only the reference programs (floors)
mkdir "$ref"
km_pod_add client "$KM_SUBNET.10"
km_pod_add srv "$KM_SUBNET.20"
km_pod_add plain "$KM_SUBNET.30"
km_pod_add ref "$KM_SUBNET.40"
cat <<JSON | km_write_config
{"resources": [
 {"workload": {"uid": "Kubernetes//Pod/c/client", "name": "client", "namespace": "c",
   "serviceAccount": "client", "addresses": ["$KM_SUBNET.10"]}},
 {"workload": {"uid": "Kubernetes//Pod/s/srv", "name": "srv", "namespace": "s",
   "serviceAccount": "srv", "addresses": ["$KM_SUBNET.20"]}},
 {"authorization": {"name": "allow-c", "namespace": "s", "scope": "NAMESPACE", "action": "ALLOW",
   "rules": [{"clauses": [{"matches": [{"namespaces": [{"exact": "c"}]}]}]}]}}
]}
JSON
km_map_writer_start --log-level warn || exit 1
km_agent_start --log-level warn
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path srv)" >/dev/null
for _ in $(seq 1 100); do # the policy is in the tables
	"$KM_TESTCTL" dump --socket "$KM_SOCKET" --table authz_stats >/dev/null 2>&1 &&
		[ "$(km_agent_json 'd["authz"]["policies"]' 2>/dev/null)" = 1 ] && break
	sleep 0.1
done
[ "$HBONE" = off ] || km_hbone_row "$KM_SUBNET.20"
build/bench/passive_bench --client-netns "$(km_netns_path client)" \
	--mesh-netns "$(km_netns_path srv)" --mesh-cgroup "$KM_CGROUP" --mesh-ip "$KM_SUBNET.20" \
	--plain-netns "$(km_netns_path plain)" --plain-cgroup "$plain" --plain-ip "$KM_SUBNET.30" \
	--ref-netns "$(km_netns_path ref)" --ref-cgroup "$ref" --ref-ip "$KM_SUBNET.40" \
	--client-ip "$KM_SUBNET.10" \
	--links-dir "$KM_DIR/bpffs/kmesh/links" --rounds "$ROUNDS" --per-round "$PER_ROUND" \
	--bulk-mb "$BULK_MB"
