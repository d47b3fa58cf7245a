#!/usr/bin/env bash
# rows_test.sh — table rows in an order that would send connections nowhere, from the xds role
# against the real map writer (issue 25, Low): a service count of 10 with only slot 9 written
# (before: accepted, only the last slot was checked), the delete of a slot that count exposes,
# and the delete of a backend an endpoint slot names (before: both accepted). Each is refused
# and nothing of it reaches the tables.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

trap 'km_env_cleanup' EXIT
km_env_setup kmr$$ >/dev/null
mkdir -p "$KM_DIR/py"
protoc --proto_path="$KM_ROOT/ipc" --python_out="$KM_DIR/py" "$KM_ROOT/ipc/kmesh_ipc.proto"
km_map_writer_start || exit 1
out=$(setpriv --reuid="$KM_NOBODY" --regid="$KM_NOBODY" --clear-groups \
	env PYTHONPATH="$KM_DIR/py" "$KM_PY" "$KM_ROOT/tests/security/attacker.py" badrows "$KM_SOCKET")
echo "$out"
check "a service count of 10 with only slot 9 written is refused (NOT_FOUND)" \
	eval '[[ "$out" == "count NOT_FOUND "* ]]'
check "a slot below the service's count is not deleted (BAD_REQUEST)" eval '[[ "$out" == *" slot BAD_REQUEST "* ]]'
check "a backend an endpoint slot names is not deleted (BAD_REQUEST)" eval '[[ "$out" == *" backend BAD_REQUEST" ]]'
dump() { "$KM_TESTCTL" dump --socket "$KM_SOCKET" --table "$1"; }
check "... and the tables hold the whole service: count 10, 10 slots, the backend" \
	eval '[ "$(dump endpoint | grep -c "^endpoint")" = 10 ] && [ "$(dump backend | grep -c "^backend")" = 1 ]'
check "the log names what was missing" grep -q "exposes endpoint index 0, which is not in km_endpoint" "$KM_DIR/map-writer.log"
[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer
km_check_summary security-rows
