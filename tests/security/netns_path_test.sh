#!/usr/bin/env bash
# netns_path_test.sh — a namespace path that is not a namespace (issue 25, item 7). The CNI
# role names each pod's namespace by path; the map writer enters it (to attach the pod's
# authorization program, and to re-check its open connections). A FIFO there blocked open()
# until someone wrote it: the map writer's loop stopped answering everyone. Now the path is
# opened without blocking and must be on nsfs: the pod is enrolled without the lookup link
# (its SYNs are decided by cgroup_skb), the map writer says why, and it keeps serving.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

trap 'km_env_cleanup' EXIT
km_env_setup kmf$$ >/dev/null
mkdir -p "$KM_DIR/py"
protoc --proto_path="$KM_ROOT/ipc" --python_out="$KM_DIR/py" "$KM_ROOT/ipc/kmesh_ipc.proto"
km_map_writer_start || exit 1
mkfifo "$KM_DIR/fifo"
out=$(PYTHONPATH="$KM_DIR/py" "$KM_PY" "$KM_ROOT/tests/security/attacker.py" enroll "$KM_SOCKET" 4242 "$KM_DIR/fifo")
echo "enroll naming a FIFO: $out"
check "an enrollment naming a FIFO as its namespace is answered at once" test "$out" = "reply OK"
check "... without the lookup link, and the map writer says why" \
	grep -q "is not a namespace (not on nsfs)" "$KM_DIR/map-writer.log"
check "the map writer keeps serving (a dump answers within 2 s)" \
	eval 'timeout 2 "$KM_TESTCTL" dump --socket "$KM_SOCKET" --table manage | grep -q 4242'
[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer
km_check_summary security-netns-path
