#!/usr/bin/env bash
# http_test.sh — slow clients against the xDS agent's HTTP endpoint (issue 25, item 5), against
# the real agent: 16 connections from one address, each sending its request one byte a second
# (before: they took all 16 slots, and /healthz timed out for 40 s, which a liveness probe turns
# into a restart). Now one address holds at most 4 connections, each is shut 10 s after it
# opened whatever it sends, another client is answered meanwhile, and the chart's probes
# (kmeshctl ready over the admin socket) do not go through HTTP at all.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

trap 'km_env_cleanup' EXIT
km_env_setup kmh$$ >/dev/null
echo '{"resources": []}' | km_write_config
km_map_writer_start || exit 1
km_agent_start
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving metrics on .* (port \([0-9]*\)).*/\1/p' "$KM_DIR/xds-agent.log" | tail -n 1)
	[ -n "$port" ] && break
	sleep 0.1
done
echo "metrics port: $port"
healthz() { # healthz SRC: prints the seconds /healthz took from source SRC, or "failed"
	local t
	t=$(curl -sS --interface "$1" --max-time 5 -o /dev/null -w '%{time_total}' \
		"http://127.0.0.1:$port/healthz" 2>/dev/null) || t=failed
	echo "$t"
}
"$KM_PY" "$KM_ROOT/tests/security/slow_http.py" hold 127.0.0.1 "$port" 127.0.0.1 16 14 \
	>"$KM_DIR/slow.out" 2>&1 &
slow=$!
sleep 3
t=$(healthz 127.0.0.2)
echo "/healthz from another address during the attack: $t s"
check "another client's /healthz is answered at once while 16 slow clients hold on ($t s)" \
	eval '[ "$t" != failed ] && awk "BEGIN {exit !($t < 1)}"'
check "the probe the chart uses (kmeshctl ready --live, admin socket) answers meanwhile" \
	"$KM_BIN/kmeshctl" --xds-socket "$KM_AGENT_SOCKET" ready --live xds-agent
wait "$slow"
cat "$KM_DIR/slow.out"
check "the slow clients: 4 at most from one address, and each shut at its 10 s deadline" \
	grep -q "^open 0 of 16" "$KM_DIR/slow.out"
t=$(healthz 127.0.0.1)
check "the attacker's address is served again afterwards ($t s)" \
	eval '[ "$t" != failed ] && awk "BEGIN {exit !($t < 1)}"'
check "the agent is still up" kill -0 "$KM_AGENT_PID"
[ $KM_FAIL -eq 0 ] || km_dump_logs xds-agent
km_check_summary security-http
