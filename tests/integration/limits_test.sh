#!/usr/bin/env bash
# limits_test.sh — a table filled to capacity: the map writer refuses what does not fit with
# TABLE_FULL, names the table and the flag, counts it in its dump, and never leaves a row that
# names a missing one; the agent reports the refusal and rewrites everything again with a wait
# that doubles while the table stays full (not every few seconds for ever), changes keep reaching
# the tables meanwhile, and once the mesh fits again a rewrite converges the tables, traffic
# flows and the wait starts again from the least.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

config() { # config N [extra]: service small (b1, b2: real pods) and service big with N fake
	# workloads; with "extra", a service extra (10.96.7.3) that b1 also serves
	{
		echo '{"resources": ['
		echo '{"service": {"name": "small", "namespace": "t", "hostname": "small.t",'
		echo '  "addresses": [{"address": "10.96.7.1"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}},'
		[ "${2:-}" = extra ] &&
			echo '{"service": {"name": "extra", "namespace": "t", "hostname": "extra.t",' &&
			echo '  "addresses": [{"address": "10.96.7.3"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}},'
		echo '{"service": {"name": "big", "namespace": "t", "hostname": "big.t",'
		echo '  "addresses": [{"address": "10.96.7.2"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}}'
		for b in 1 2; do
			local in='"t/small.t": {}'
			[ "${2:-}" = extra ] && [ $b = 1 ] && in="$in, \"t/extra.t\": {}"
			echo ",{\"workload\": {\"uid\": \"Kubernetes//Pod/t/b$b\", \"addresses\": [\"$KM_SUBNET.2$b\"],"
			echo "  \"services\": {$in}}}"
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

metric() { # metric NAME: the agent's sample of NAME (no labels)
	local page
	page=$(km_metrics) || return 1
	awk -v n="$1" '$1 == n {print $2}' <<<"$page"
}

wait_metric_at_least() { # wait_metric_at_least NAME VALUE SECONDS
	local i v
	for i in $(seq 1 $(($3 * 10))); do
		v=$(metric "$1")
		awk -v v="${v:-0}" -v w="$2" 'BEGIN {exit !(v >= w)}' && return 0
		sleep 0.1
	done
	echo "$1 is ${v:-missing}, expected at least $2" >&2
	return 1
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
config 10 # 12 workloads for a backend table of 16: b1 and b2 have their rows
km_map_writer_start --max-backends 16 || exit 1
km_agent_start --rewrite-after-refusal-ms 200 # then 400, 800, 1600, ...
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
km_wait_rows backend "^backend" 12 || exit 1
config 20 # 22 workloads: 6 do not fit

check "km_backend fills to its size and no further (16 rows)" km_wait_rows backend "^backend" 16
check "the refusal is counted in the map writer's dump (table_full >= 1)" \
	eval '[ "$(stat_of table_full)" -ge 1 ]'
check "the map writer names the full table and the flag to raise" \
	grep -q "km_backend is full.*raise its size flag" "$KM_DIR/map-writer.log"
check "the agent reports the refusal (TABLE_FULL)" grep -q "refused the rest: TABLE_FULL" "$KM_DIR/xds-agent.log"
check "no endpoint row names a missing backend" endpoints_resolve

# The table stays full: rewrites follow at 0.2, 0.6, 1.4, 3.0 s, ... (every 0.2 s without the
# backoff: 15 in 3 s).
check "the agent rewrites everything again while the table stays full (3 rewrites)" \
	wait_metric_at_least kmesh_table_rewrites_total 3 10
check "... and the wait doubles (the fourth is 1.6 s)" \
	wait_metric_at_least kmesh_table_rewrite_wait_seconds 1.6 5
before=$(metric kmesh_table_rewrites_total)
sleep 3
after=$(metric kmesh_table_rewrites_total)
check "... so a full table costs at most 2 rewrites in 3 s ($before -> $after)" \
	within "$((after - before))" 0 2
check "the agent says it backs off" grep -q "the next one in .* (the wait doubles" "$KM_DIR/xds-agent.log"
config 20 extra # a change that needs no new backend row
wait_extra() { # b1 answers on 10.96.7.3 within 3 s
	local end=$(($(date +%s%N) + 3000000000)) out
	while [ "$(date +%s%N)" -lt "$end" ]; do
		out=$(km_connect client 10.96.7.3 80 --timeout 0.5)
		[ "$(count_of b1 <<<"$out")" -eq 1 ] && return 0
		sleep 0.1
	done
	echo "10.96.7.3 answered: $out" >&2
	return 1
}
check "changes still reach the tables while one is full: a new service answers within 3 s" wait_extra

config 14 # 16 workloads: the mesh fits again, to the last row
wait_clean_rewrite() { # the next rewrite (up to 6.4 s away) goes through
	for _ in $(seq 1 150); do
		grep -q "a full rewrite went through" "$KM_DIR/xds-agent.log" && return 0
		sleep 0.1
	done
	return 1
}
check "once it fits, the next rewrite goes through, so the wait starts again from the least" \
	wait_clean_rewrite
check "... and none is due" test "$(metric kmesh_table_rewrite_wait_seconds)" = 0.000
check "... and the tables hold the whole mesh: 16 backends" km_wait_rows backend "^backend" 16
check "... and 16 endpoints" km_wait_rows endpoint "^endpoint" 16
check "no endpoint row names a missing backend" endpoints_resolve
out=$(km_connect client 10.96.7.1 80 --count 20)
check "traffic to the small service flows (b1 and b2 answer)" \
	test "$(($(count_of b1 <<<"$out") + $(count_of b2 <<<"$out")))" -eq 20

km_check_summary limits
