#!/usr/bin/env bash
# sync_test.sh — the xDS role's mark and sweep (Sync BEGIN, then END deletes every routing and
# authorization row not written since BEGIN) belongs to the connection that began it, and one
# xDS writer connects at a time (issue 25, item 2). The attacker is another process of the
# agent's uid (nobody here, as in the chart):
#   - while the agent is connected, its hello for the xds role is refused, so it cannot sweep
#     the agent's rows (before: its BEGIN and END deleted every row the agent had written, a
#     DENY policy's included, while the agent still listed them as applied);
#   - with no agent connected, a sync begun on one connection cannot be ended from another, and
#     a connection that leaves in the middle of a sync sweeps nothing.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

trap 'km_env_cleanup' EXIT
km_env_setup kmy$$ >/dev/null
mkdir -p "$KM_DIR/py"
protoc --proto_path="$KM_ROOT/ipc" --python_out="$KM_DIR/py" "$KM_ROOT/ipc/kmesh_ipc.proto"
cat <<JSON | km_write_config
{"resources": [
 {"service": {"name": "web", "namespace": "t", "hostname": "web.t", "addresses": [{"address": "10.96.9.1"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}]}},
 {"workload": {"uid": "Kubernetes//Pod/t/b1", "namespace": "t", "serviceAccount": "b1",
   "addresses": ["$KM_SUBNET.21"], "services": {"t/web.t": {}}}},
 {"workload": {"uid": "Kubernetes//Pod/t/b2", "namespace": "t", "serviceAccount": "b2",
   "addresses": ["$KM_SUBNET.22"], "services": {"t/web.t": {}}}},
 {"authorization": {"name": "deny-dev", "namespace": "t", "scope": "NAMESPACE", "action": "DENY",
   "rules": [{"clauses": [{"matches": [{"namespaces": [{"exact": "dev"}]}]}]}]}}
]}
JSON
km_map_writer_start || exit 1
km_agent_start
km_wait_rows endpoint "^endpoint" 2 || exit 1
attack() { # as the agent's uid
	setpriv --reuid="$KM_NOBODY" --regid="$KM_NOBODY" --clear-groups \
		env PYTHONPATH="$KM_DIR/py" "$KM_PY" "$KM_ROOT/tests/security/attacker.py" "$@"
}
rows() {
	local t n=0
	for t in frontend service endpoint backend; do
		n=$((n + $("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table "$t" | grep -c "^$t ")))
	done
	echo "$n"
}
rows_kept() { sleep 0.3; [ "$(rows)" = "$before" ]; }
before=$(rows)
echo "rows the agent wrote: $before"

out=$(attack sync "$KM_SOCKET" begin end)
echo "$out"
check "with the agent connected, another peer's hello for the xds role is refused" \
	eval '[[ "$out" == "hello refused: role '"'"'xds'"'"' is held by pid "* ]]'
check "... and the agent's rows are all there ($before)" rows_kept

kill "$KM_AGENT_PID"
wait "$KM_AGENT_PID" 2>/dev/null
out=$(attack sync "$KM_SOCKET" begin)
echo "$out"
check "agent gone: a peer begins a sync and leaves" test "$out" = "begin OK"
check "... nothing was swept, and the map writer says so" \
	eval 'rows_kept && grep -q "left during a sync: nothing was swept" "$KM_DIR/map-writer.log"'
out=$(attack sync "$KM_SOCKET" end)
echo "$out"
check "another connection's END is refused: the sync was not its own" test "$out" = "end BAD_REQUEST"
check "... and every row is still there" rows_kept

km_agent_start
check "an agent connects again as the xds writer and syncs (no row lost or left over)" \
	eval 'for _ in $(seq 1 50); do grep -q "in sync with the map writer" <(tail -n 5 "$KM_DIR/xds-agent.log") && break; sleep 0.1; done; rows_kept'
[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer xds-agent
km_check_summary security-sync
