#!/usr/bin/env bash
# conns_test.sh — a local process holding the map writer's connections, never reading its
# replies, or writing into its log (issue 25, items 3 and 4, and escaping), against the real
# daemon:
#   - a uid in the socket group with no role opens 1,100 connections and keeps reopening them:
#     at most 16 are held (peers that may take no role), the rest are answered
#     RESOURCE_EXHAUSTED at once; enrollments (the CNI role) keep working throughout, and the
#     map writer's descriptors stay bounded (before: it ran out of them and CNI ADD failed open);
#   - five uids that may take the xds role each hold all they can: 16 per uid, and the room kept
#     for the cni and admin roles still takes an enrollment;
#   - an admin connection pipelines 40 dumps of a 4,000-row table and reads nothing: the map
#     writer stops reading it once 1 MiB of replies waits, an enrollment meanwhile answers at
#     once, and after 10 s the reader is cut off (before: all 40 replies queued in memory).
#   - a process name and a pod name carrying a newline and a fake log line: the name is escaped,
#     the pod refused.
# The counters say so (kmesh_ipc_connections_refused_total, kmesh_ipc_peers_cut_total).
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

trap 'km_env_cleanup' EXIT
km_env_setup kmc$$ >/dev/null
mkdir -p "$KM_DIR/py"
protoc --proto_path="$KM_ROOT/ipc" --python_out="$KM_DIR/py" "$KM_ROOT/ipc/kmesh_ipc.proto"
for p in a b c d; do km_pod_add "$p" "$KM_SUBNET.1$(printf %d "'$p" | tail -c1)"; done
# any uid of group nobody may take the xds role (five attackers); 128 connections in all, 16
# per uid: small numbers, the same rules
km_map_writer_start --allow "xds:gid=$KM_NOBODY" --max-connections 128 \
	--max-connections-per-uid 16 || exit 1
# exec: a background job's pid is then the attacker's own. as_uid: group nobody (may take the
# xds role here); as_stranger: a group of its own, and nobody only as a supplementary group
# (it may open the socket file, SO_PEERCRED does not show it)
as_uid() { local u=$1; shift; exec setpriv --reuid="$u" --regid="$KM_NOBODY" --clear-groups "$@"; }
as_stranger() { local u=$1; shift; exec setpriv --reuid="$u" --regid="$u" --groups="$KM_NOBODY" "$@"; }
attack() { PYTHONPATH="$KM_DIR/py" "$KM_PY" "$KM_ROOT/tests/security/attacker.py" "$@"; }
fds() { ls "/proc/$KM_MW_PID/fd" | wc -l; }
# enroll POD: as the CNI plugin would (root, cni role); prints the milliseconds it took
enroll() {
	local t0=$(date +%s%N)
	"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path "$1")" --pod "t/$1" \
		>/dev/null 2>"$KM_DIR/enroll.err" || { cat "$KM_DIR/enroll.err"; return 1; }
	echo $((($(date +%s%N) - t0) / 1000000))
}
metric() { grep -qF -- "$1" "$KM_DIR/metrics/map-writer.prom"; }
fd0=$(fds)

# 1. strangers (no role: uids outside --allow, in the socket group) take all they can: the first
# up to its uid's limit, the second finds the strangers' room full
ulimit -n 4096
( as_stranger 12345 env PYTHONPATH="$KM_DIR/py" "$KM_PY" "$KM_ROOT/tests/security/attacker.py" \
	hold "$KM_SOCKET" 1100 12 >"$KM_DIR/hold1.out" 2>&1 ) &
hold=$!
for _ in $(seq 1 200); do grep -q "^held" "$KM_DIR/hold1.out" && break; sleep 0.1; done
( as_stranger 12346 env PYTHONPATH="$KM_DIR/py" "$KM_PY" "$KM_ROOT/tests/security/attacker.py" \
	hold "$KM_SOCKET" 100 12 >"$KM_DIR/hold2.out" 2>&1 ) &
hold2=$!
for _ in $(seq 1 200); do grep -q "^held" "$KM_DIR/hold2.out" && break; sleep 0.1; done
cat "$KM_DIR/hold1.out" "$KM_DIR/hold2.out"
check "a stranger's 1,100 connections: 16 held (one uid's limit), the rest refused at once" \
	grep -qE "^held 16 of 1100, refused 1084: RESOURCE_EXHAUSTED .*the most one uid may hold" "$KM_DIR/hold1.out"
check "... a second stranger uid gets none: 16 strangers in all" \
	grep -qE "^held 0 of 100, refused 100: RESOURCE_EXHAUSTED .*may take no role" "$KM_DIR/hold2.out"
peak=$(fds)
ms=$(enroll a)
echo "enroll during the flood: $ms ms; map writer fds $fd0 -> $peak"
check "... an enrollment (cni role) works meanwhile, in under 2 s" eval '[ -n "$ms" ] && [ "$ms" -lt 2000 ]'
sleep 6 # past the hello deadline: the held ones were closed and reopened
ms2=$(enroll b)
check "... and still after the stranger reopened its connections ($ms2 ms)" eval '[ -n "$ms2" ] && [ "$ms2" -lt 2000 ]'
check "... the map writer's descriptors stay bounded (+$((peak - fd0)), at most +32)" \
	eval '[ $((peak - fd0)) -le 32 ] && [ $(($(fds) - fd0)) -le 32 ]'
kill "$hold" "$hold2" 2>/dev/null; wait "$hold" "$hold2" 2>/dev/null
check "... the refusals are logged at most 20 lines per 10 s, not one per connection" \
	eval '[ "$(grep -c "refusing a connection from" "$KM_DIR/map-writer.log")" -le 40 ]'
check "... and so are the hello deadlines it ran into" \
	eval '[ "$(grep -c "sent no hello within" "$KM_DIR/map-writer.log")" -le 40 ]'

# 2. five uids that may take the xds role hold all they can (without a hello: the role is held
# by one peer at a time): the others' room (128 - 64) fills, the room kept for cni and admin
# does not
pids=()
for u in 20001 20002 20003 20004 20005; do
	( as_uid $u env PYTHONPATH="$KM_DIR/py" "$KM_PY" "$KM_ROOT/tests/security/attacker.py" \
		hold "$KM_SOCKET" 40 8 >"$KM_DIR/hold-$u.out" 2>&1 ) &
	pids+=($!)
done
for _ in $(seq 1 300); do
	[ "$(cat "$KM_DIR"/hold-2000?.out 2>/dev/null | grep -c '^held')" -eq 5 ] && break
	sleep 0.1
done
cat "$KM_DIR"/hold-2000?.out
held=$(awk '/^held/ {s += $2} END {print s + 0}' "$KM_DIR"/hold-2000?.out)
check "five uids: at most 16 each, 64 in all (held $held)" \
	eval '[ "$held" -eq 64 ] && ! grep -qE "^held (1[7-9]|[2-9][0-9])" "$KM_DIR"/hold-2000?.out'
check "... the rest refused: the others' room is full" \
	grep -q "the most this server takes from peers without the cni or admin role" "$KM_DIR"/hold-2000?.out
ms=$(enroll c)
echo "enroll with the others' room full: $ms ms"
check "... the room kept for the cni role takes an enrollment ($ms ms)" eval '[ -n "$ms" ] && [ "$ms" -lt 2000 ]'
kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null

# 3. a reader that never reads: 40 pipelined dumps of 4,000 backends
out=$( as_uid "$KM_NOBODY" env PYTHONPATH="$KM_DIR/py" "$KM_PY" "$KM_ROOT/tests/security/attacker.py" backends "$KM_SOCKET" 4000)
check "4,000 backend rows written (xds role)" test "$out" = "reply OK"
rss0=$(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$KM_MW_PID/status")
attack dumps "$KM_SOCKET" 40 backend >"$KM_DIR/dumps.out" 2>&1 &
dumper=$!
sleep 2
ms=$(enroll d)
rss1=$(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$KM_MW_PID/status")
echo "enroll while 40 dumps wait unread: $ms ms; map writer RSS $rss0 -> $rss1 MiB"
check "an enrollment while 40 dumps wait unread answers in under 500 ms" eval '[ -n "$ms" ] && [ "$ms" -lt 500 ]'
check "... the unread replies do not pile up (RSS +$((rss1 - rss0)) MiB, at most +8)" eval '[ $((rss1 - rss0)) -le 8 ]'
wait "$dumper"
cat "$KM_DIR/dumps.out"
check "... the reader stopped being served once its replies waited, and was cut off" \
	eval 'grep -qE "^replies ([0-9]|[1-2][0-9]) of 40, closed" "$KM_DIR/dumps.out"'
check "... and the log says why" grep -q "of replies unread for 10000 ms; cut off" "$KM_DIR/map-writer.log"

# 4. a peer's strings go into the log: a newline in them must not make a line of its own
out=$(attack forge "$KM_SOCKET")
check "a pod name with a newline is refused ($out)" test "$out" = "enroll BAD_REQUEST"
check "... and no forged line reaches the log: the peer's process name is escaped" \
	eval '! grep -q "^2026-01-01T00:00:00.000Z error kmesh-map-writer: FORGED" "$KM_DIR/map-writer.log" && grep -q "attacker\\\\x0a2026" "$KM_DIR/map-writer.log"'

sleep 1.5 # the metrics file is written every second
check "metrics: refusals by limit and the reader cut off" eval \
	'metric "kmesh_ipc_connections_refused_total{limit=\"no_role\"}" && metric "kmesh_ipc_connections_refused_total{limit=\"per_uid\"}" && grep -qE "^kmesh_ipc_peers_cut_total\{reason=\"slow_reader\"\} [1-9]" "$KM_DIR/metrics/map-writer.prom"'
check "the log says how many lines about refused peers it left out" \
	grep -q "more lines about refused or closed peers left out" "$KM_DIR/map-writer.log"
check "the map writer is still up" kill -0 "$KM_MW_PID"
[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer
km_check_summary security-conns
