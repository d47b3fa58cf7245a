#!/usr/bin/env bash
# xds_memory_test.sh — istiod's responses against the agent's memory (issue 25, Low): a response
# of 60 MB of removed names costs its bytes, not a copy per name (before: each name was copied,
# and 120 MB of empty removals took the agent to 2.4 GB), empty names are NACKed, and a response
# over --xds-max-message (default 64 MiB) is refused before it is read, saying which flag to raise.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

trap 'km_env_cleanup' EXIT
km_env_setup kxm$$ >/dev/null
km_make_pki
echo t1 >"$KM_DIR/token"
chmod 644 "$KM_DIR/token"
km_istiod_start
km_map_writer_start || exit 1
km_agent_start_xds
hwm_mib() { awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$KM_AGENT_PID/status"; }
responses() { km_agent_json 'd["istiod"]["address"]["responses"]'; }
wait_responses() { # wait_responses N: until the agent has taken N Address responses (20 s)
	for _ in $(seq 1 200); do [ "$(responses 2>/dev/null)" -ge "$1" ] 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
wait_responses 1 || { km_dump_logs xds-agent; exit 1; }
base=$(hwm_mib)
echo "agent peak memory at start: $base MiB"

km_istiod send '{"cmd": "push-removals", "count": 30000000, "name": ""}' >/dev/null
check "60 MB of empty removed names: taken, and NACKed saying why" \
	eval 'wait_responses 2 && km_agent_json "d[\"istiod\"][\"address\"][\"last_nack\"]" | grep -q "30000000 removed name(s) empty"'
after=$(hwm_mib)
echo "agent peak memory: $base -> $after MiB"
check "... costing the response's bytes, not a copy per name (+$((after - base)) MiB, at most +150)" \
	eval '[ $((after - base)) -le 150 ]'

km_istiod send '{"cmd": "push-removals", "count": 20000000, "name": "a"}' >/dev/null
check "60 MB of one-byte names (unknown: ignored) taken and ACKed" \
	eval 'wait_responses 3 && [ "$(km_agent_json "d[\"istiod\"][\"address\"][\"nacks\"]")" = 1 ]'
after2=$(hwm_mib)
echo "agent peak memory: $after -> $after2 MiB"
check "... within the same bound (+$((after2 - base)) MiB over the start, at most +150)" \
	eval '[ $((after2 - base)) -le 150 ]'

km_istiod send '{"cmd": "push-removals", "count": 35000000, "name": ""}' >/dev/null
sleep 2
check "a 70 MB response, over the default --xds-max-message (64 MiB): refused, naming the flag" \
	grep -q "over --xds-max-message (67108864): raise it" "$KM_DIR/xds-agent.log"
check "the agent is still up" kill -0 "$KM_AGENT_PID"
[ $KM_FAIL -eq 0 ] || km_dump_logs xds-agent
km_check_summary security-xds-memory
