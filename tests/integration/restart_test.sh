#!/usr/bin/env bash
# restart_test.sh — restarts lose no traffic and leave no stale rows. A client in an enrolled pod
# opens new connections through a VIP at 300/s while the map writer is killed (-9) and restarted
# 5 times, then the xDS agent 5 times: every connection must succeed (the programs stay attached
# and the maps filled while a process is down; a restarted map writer adopts them). Rows removed
# from the configuration while the map writer was down, or while no agent ran, are swept once the
# (re)connected agent has written its whole state.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

S=$KM_SUBNET
write_config() { # write_config WORKLOAD...: service "web" with these backends (b1 b2 b3)
	local w sep=
	{
		echo '{"resources": [{"service": {"name": "web", "namespace": "t", "hostname": "web.t",
		  "addresses": [{"address": "10.96.7.1"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}}'
		for w in "$@"; do
			echo ", {\"workload\": {\"uid\": \"Kubernetes//Pod/t/$w\", \"addresses\": [\"$S.2${w#b}\"],
			  \"services\": {\"t/web.t\": {}}}}"
		done
		echo ']}'
	} | km_write_config
}

trap 'km_env_cleanup' EXIT
km_env_setup kmr$$
km_pod_add client "$S.10"
for b in b1 b2 b3; do km_pod_add "$b" "$S.2${b#b}"; km_backend_start "$b" 8080; done
for b in b1 b2 b3; do km_wait_listen "$b" 8080 || exit 1; done
write_config b1 b2 b3
km_map_writer_start || exit 1
km_agent_start
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
check "converged: 3 endpoints" km_wait_rows endpoint "^endpoint" 3

# A restarted map writer rebuilds its frontend filter (km_fe_filter, not pinned) from the pinned
# rows before its programs take over: with the agent stopped, nobody writes them again, and the
# VIP must still be routed.
kill -STOP "$KM_AGENT_PID"
kill -9 "$KM_MW_PID"
wait "$KM_MW_PID" 2>/dev/null
km_map_writer_start || exit 1
out=$(km_connect client 10.96.7.1 80 --count 5)
check "a restarted map writer routes the VIP before any agent writes again (filter rebuilt)" \
	test $(($(count_of b1 <<<"$out") + $(count_of b2 <<<"$out") + $(count_of b3 <<<"$out"))) -eq 5
kill -CONT "$KM_AGENT_PID"

km_steady_start client 10.96.7.1 80
sleep 1
for i in 1 2 3 4 5; do
	kill -9 "$KM_MW_PID"
	wait "$KM_MW_PID" 2>/dev/null
	sleep 0.3
	km_map_writer_start || break
	sleep 0.5
done
check "the map writer restarted 5 times, adopting its maps (6 with the one above)" \
	test "$(grep -c 'maps adopted' "$KM_DIR/map-writer.log")" -eq 6
for i in 1 2 3 4 5; do
	kill -9 "$KM_AGENT_PID"
	wait "$KM_AGENT_PID" 2>/dev/null
	sleep 0.3
	km_agent_start
	sleep 0.5
done
sleep 1
km_steady_stop
ok=$KM_STEADY_OK failed=$KM_STEADY_FAILED seconds=$KM_STEADY_SECONDS
check "no connection failed across 10 restarts ($ok ok, $failed failed)" \
	eval "[ $failed -eq 0 ] && [ $ok -ge $((200 * ${seconds%.*})) ]"
check "every restarted agent swept nothing (nothing was stale)" \
	test "$(grep -c 'in sync with the map writer: 0 stale rows removed' "$KM_DIR/xds-agent.log")" -ge 6

# ---- stale rows ---------------------------------------------------------------------------
kill -9 "$KM_MW_PID"
wait "$KM_MW_PID" 2>/dev/null
write_config b1 b2 # b3 goes while the map writer is down: the agent cannot tell it
sleep 0.5
km_map_writer_start || exit 1
check "b3, removed while the map writer was down, is swept (2 endpoints)" \
	km_wait_rows endpoint "^endpoint" 2
check "... and its backend row (2 backends)" km_wait_rows backend "^backend" 2
# (no identity row: none is written while no policy exists, and this mesh has none)
check "the map writer's dump counts the swept rows (endpoint, backend)" \
	km_wait_rows frontend "^stats .*rows_swept 2 " 1
kill -9 "$KM_AGENT_PID"
wait "$KM_AGENT_PID" 2>/dev/null
write_config b1 # b2 goes while no agent runs
km_agent_start
check "b2, removed while no agent ran, is swept (1 endpoint)" km_wait_rows endpoint "^endpoint" 1
check "... and its backend row (1 backend)" km_wait_rows backend "^backend" 1
check "pods without a waypoint of their own have no pod-IP frontend rows" \
	km_wait_rows frontend "kind workload" 0
out=$(km_connect client 10.96.7.1 80 --count 20)
check "all traffic goes to b1" test "$(count_of b1 <<<"$out")" -eq 20

km_check_summary restart
