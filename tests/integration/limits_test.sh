#!/usr/bin/env bash
# limits_test.sh — a table filled to capacity: the map writer refuses what does not fit with
# TABLE_FULL, names the table and the flag, counts it in its dump, and never leaves a row that
# names a missing one; the agent reports the refusal and, once the mesh fits again, rewrites
# everything, so the tables converge and traffic flows.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

config() { # config N: service small (b1, b2: real pods) and service big with N fake workloads
	{
		echo '{"resources": ['
		echo '{"service": {"name": "small", "namespace": "t", "hostname": "small.t",'
		echo '  "addresses": [{"address": "10.96.7.1"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}},'
		echo '{"service": {"name": "big", "namespace": "t", "hostname": "big.t",'
		echo '  "addresses": [{"address": "10.96.7.2"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}}'
		for b in 1 2; do
			echo ",{\"workload\": {\"uid\": \"Kubernetes//Pod/t/b$b\", \"addresses\": [\"$KM_SUBNET.2$b\"],"
			echo '  "services": {"t/small.t": {}}}}'
		done
		for i in $(seq 1 "$1"); do
			echo ",{\"workload\": {\"uid\": \"Kubernetes//Pod/t/w$i\", \"addresses\": [\"10.77.0.$i\"],"
			echo '  "services": {"t/big.t": {}}}}'
		done
		echo ']}'
	} | km_write_config
}

stat_of() { # stat_of NAME: a counter from the map writer's dump
	"$KM_TESTCTL" dump --socket "$KM_SOCKET" --table backend | awk -v n="$1" \
		'$1 == "stats" {for (i = 2; i < NF; i++) if ($i == n) print $(i + 1)}'
}

# Every endpoint row names a backend that is in km_backend.
endpoints_resolve() {
	local backends
	backends=$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table backend | awk '$1 == "backend" {print $2}')
	"$KM_TESTCTL" dump --socket "$KM_SOCKET" --table endpoint | awk '$1 == "endpoint" {print $9}' |
		while read -r id; do grep -qx "$id" <<<"$backends" || { echo "endpoint names missing backend $id" >&2; exit 1; }; done
}

trap 'km_env_cleanup' EXIT
km_env_setup kmf$$
km_pod_add client "$KM_SUBNET.10"
for b in b1 b2; do
	km_pod_add "$b" "$KM_SUBNET.2${b#b}"
	km_backend_start "$b" 8080
done
for b in b1 b2; do km_wait_listen "$b" 8080 || exit 1; done
config 20 # 22 workloads for a backend table of 16
km_map_writer_start --max-backends 16 || exit 1
km_agent_start
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null

check "km_backend fills to its size and no further (16 rows)" km_wait_rows backend "^backend" 16
check "the refusal is counted in the map writer's dump (table_full >= 1)" \
	eval '[ "$(stat_of table_full)" -ge 1 ]'
check "the map writer names the full table and the flag to raise" \
	grep -q "km_backend is full.*raise its size flag" "$KM_DIR/map-writer.log"
check "the agent reports the refusal (TABLE_FULL)" grep -q "refused the rest: TABLE_FULL" "$KM_DIR/xds-agent.log"
check "no endpoint row names a missing backend" endpoints_resolve

config 10 # 12 workloads: the mesh fits again
check "once it fits, the agent rewrites everything: 12 backends" km_wait_rows backend "^backend" 12
check "... and 12 endpoints" km_wait_rows endpoint "^endpoint" 12
check "no endpoint row names a missing backend" endpoints_resolve
out=$(km_connect client 10.96.7.1 80 --count 20)
check "traffic to the small service flows (b1 and b2 answer)" \
	test "$(($(count_of b1 <<<"$out") + $(count_of b2 <<<"$out")))" -eq 20

km_check_summary limits
