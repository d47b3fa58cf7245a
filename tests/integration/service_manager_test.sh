#!/usr/bin/env bash
# service_manager_test.sh — the daemons speak systemd's notify protocol (Type=notify units): a
# datagram socket plays systemd (NOTIFY_SOCKET, WATCHDOG_USEC) and records what each daemon
# sends. The map writer says READY=1 only once its socket answers, the xDS agent once its admin
# socket does and STATUS= when its configuration is in the tables; both ping the watchdog at
# half its interval from their event loops, and say STOPPING=1 on SIGTERM. Takes ~5 s.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

# the listener first: km_env_cleanup waits for every child of this shell
trap '[ -n "${LISTENER:-}" ] && kill "$LISTENER" 2>/dev/null; km_env_cleanup' EXIT
km_env_setup kmsd$$
NOTIFY=$KM_DIR/notify.sock
# one line per datagram: "<seconds> <pid> <message with newlines as |>"
"$KM_PY" -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)  # the agent runs as an unprivileged uid
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
        pid = 0
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = int.from_bytes(data[0:4], "little")
        out.write("%.3f %d %s\n" % (time.monotonic(), pid, msg.decode().replace("\n", "|")))
' "$NOTIFY" "$KM_DIR/notify.log" &
LISTENER=$!
for _ in $(seq 1 50); do [ -S "$NOTIFY" ] && break; sleep 0.05; done

# lines MATCH PID: the messages of one process that contain MATCH
lines() { awk -v pid="$2" '$2 == pid' "$KM_DIR/notify.log" | grep -c -- "$1"; }
wait_for() { # wait_for MATCH PID: up to 5 s for a message
	for _ in $(seq 1 100); do [ "$(lines "$1" "$2")" -ge 1 ] && return 0; sleep 0.05; done
	return 1
}

NOTIFY_SOCKET=$NOTIFY WATCHDOG_USEC=400000 km_map_writer_start || exit 1
check "map writer: READY=1, with a STATUS= naming its socket" \
	eval 'wait_for "READY=1|STATUS=programs attached, tables open, serving on $KM_SOCKET" $KM_MW_PID'
check "... sent once its socket answers (kmeshctl ready map-writer at once)" \
	eval '"$KM_ROOT/build/bin/kmeshctl" --map-writer-socket "$KM_SOCKET" ready map-writer >/dev/null'
sleep 1.2
n=$(lines "WATCHDOG=1" "$KM_MW_PID")
check "map writer: the watchdog is pinged every 200 ms, half of WATCHDOG_USEC ($n in ~1.2 s)" \
	eval '[ $n -ge 4 ] && [ $n -le 9 ]'

echo '{"resources": []}' | km_write_config
NOTIFY_SOCKET=$NOTIFY WATCHDOG_USEC=400000 km_agent_start
check "xDS agent: READY=1 once up" eval 'wait_for "READY=1|STATUS=started" $KM_AGENT_PID'
check "... and STATUS= once its configuration is in the map writer's tables" \
	eval 'wait_for "STATUS=ready: the configuration" $KM_AGENT_PID'
sleep 0.5
check "xDS agent: the watchdog is pinged too" eval '[ "$(lines "WATCHDOG=1" "$KM_AGENT_PID")" -ge 2 ]'

kill -TERM "$KM_AGENT_PID" "$KM_MW_PID"
check "both say STOPPING=1 on SIGTERM" \
	eval 'wait_for "STOPPING=1" $KM_AGENT_PID && wait_for "STOPPING=1" $KM_MW_PID'
wait "$KM_AGENT_PID" "$KM_MW_PID" 2>/dev/null
KM_AGENT_PID= KM_MW_PID=
km_check_summary service_manager
