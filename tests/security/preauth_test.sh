#!/usr/bin/env bash
# preauth_test.sh — attacks on the map writer's socket by local processes (issue 25, item 1), each
# against the real daemon, with its peak resident memory (VmHWM) read before and after:
#   - a process holding no role announces a 16 MiB frame and sends it: closed at the header
#     (a stranger's frames are at most 4 KiB until its hello is accepted);
#   - 24 connections each send all but the last byte of a 16 MiB frame: all closed, and the
#     map writer's memory does not grow by their size (it grew by 384 MiB before);
#   - a connection that sends nothing is closed after the hello deadline (5 s);
#   - kmeshctl's role (admin, root may take it) sends an 8 MiB frame: over its 64 KiB limit,
#     while its replies may still be large (a dump of 4000 rows);
# and first, while its memory is low: the xDS role (uid nobody here) sends 8 MiB of empty
# table ops, ~54x their size once unpacked: refused as not valid, within the stated bound (20x
# the frame; it took ~400 MiB before).
# The map writer keeps serving throughout (an enrollment works at the end).
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

trap 'km_env_cleanup' EXIT
km_env_setup kms$$ >/dev/null
mkdir -p "$KM_DIR/py"
protoc --proto_path="$KM_ROOT/ipc" --python_out="$KM_DIR/py" "$KM_ROOT/ipc/kmesh_ipc.proto"
km_pod_add pod "$KM_SUBNET.10"
km_map_writer_start || exit 1
attack() { PYTHONPATH="$KM_DIR/py" "$KM_PY" "$KM_ROOT/tests/security/attacker.py" "$@"; }
hwm_mib() { awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$KM_MW_PID/status"; }
alive() { kill -0 "$KM_MW_PID" 2>/dev/null; }

before_xds=$(hwm_mib)
out=$(setpriv --reuid="$KM_NOBODY" --regid="$KM_NOBODY" --clear-groups \
	env PYTHONPATH="$KM_DIR/py" "$KM_PY" "$KM_ROOT/tests/security/attacker.py" emptyops "$KM_SOCKET" xds 8)
echo "xds, 8 MiB of empty ops: $out"
xds_hwm=$(hwm_mib)
echo "map writer peak memory: $before_xds -> $xds_hwm MiB"
check "xds role: 8 MiB of empty ops is refused as not valid" test "$out" = "reply BAD_REQUEST"
check "... within its bound: at most 20x the frame plus 4 MiB (164 MiB), and the frame, more" \
	eval 'alive && [ $((xds_hwm - before_xds)) -le $((8 * 20 + 4 + 8)) ]'
# a fresh map writer (its peak memory starts low again; the pinned tables stay)
kill -KILL "$KM_MW_PID"
wait "$KM_MW_PID" 2>/dev/null
km_map_writer_start || exit 1
base=$(hwm_mib)
echo "map writer peak memory at start: $base MiB"
out=$(attack bigframe "$KM_SOCKET")
echo "$out"
check "no role: a 16 MiB frame is refused at its header, not read" \
	eval '[[ "$out" == "closed after "* ]] && [ "${out##* after }" != "" ] && [ "$(awk "{print \$3}" <<<"$out")" -lt $((16 << 20)) ]'
check "... and the log says why" grep -q "announced a frame over 4096 bytes before its hello" "$KM_DIR/map-writer.log"
out=$(attack shortframes "$KM_SOCKET" 24)
echo "$out"
check "no role: 24 frames held one byte short are all closed" test "$out" = "closed 24 of 24"
after=$(hwm_mib)
echo "map writer peak memory after: $after MiB"
check "... and the map writer's peak memory grew by less than 16 MiB ($base -> $after MiB)" \
	eval 'alive && [ $((after - base)) -lt 16 ]'
out=$(attack idle "$KM_SOCKET" 8)
echo "$out"
check "a connection without a hello is closed after the 5 s deadline" \
	eval '[[ "$out" == "closed after "* ]] && awk "{exit !(\$3 >= 4.5 && \$3 < 7.5)}" <<<"$out"'
out=$(attack emptyops "$KM_SOCKET" admin 8)
echo "admin, 8 MiB frame: $out"
check "admin role: an 8 MiB frame is over its 64 KiB limit (closed)" test "$out" = closed
# the small request limits are for what a peer sends, not for what it is sent
out=$(attack backends "$KM_SOCKET" 4000)
check "an xds batch of 4000 backend rows is applied" test "$out" = "reply OK"
check "an admin's dump of them (a reply over its 64 KiB request limit) arrives whole" \
	eval '[ "$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table backend | grep -c "^backend ")" = 4000 ]'
check "the map writer still serves: a pod enrolls" \
	eval '"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path pod)" >/dev/null'
[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer
km_check_summary security-preauth
