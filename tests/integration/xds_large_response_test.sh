#!/usr/bin/env bash
# xds_large_response_test.sh — responses over 1 MiB, whose bytes the agent gives back to the
# kernel as it applies them (shared/msgbuf.h): a delta that changes 11,000 workloads and removes
# 1,000 in one response must remove them (the removed names come after the resources, in pages
# already released); and the agent starts applying a large response while its bytes still
# arrive.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

dump() { km_agent_json "$1" 2>/dev/null; }

rows_are() { # rows_are TABLE PATTERN COUNT: km_wait_rows, its table not printed on failure
	km_wait_rows "$@" 2>"$KM_DIR/rows.err" || { head -1 "$KM_DIR/rows.err" >&2; return 1; }
}

trap 'km_env_cleanup' EXIT
km_env_setup kxl$$
km_make_pki
echo t1 >"$KM_DIR/token"
chmod 644 "$KM_DIR/token"
km_istiod_start
km_map_writer_start --max-frontends 16000 --max-endpoints 16000 --max-backends 16000 \
	--max-services 1000 --max-authz-addresses 16000 || exit 1
km_agent_start_xds
km_wait_agent 'd["istiod"]["connected"] and d["istiod"]["address"]["synced"]' 10 || exit 1

km_istiod send '{"cmd": "prepare", "workloads": 12000, "services": 100}' >/dev/null
km_istiod send '{"cmd": "set-prepared"}' >/dev/null
check "the first push: 12,000 workloads and 100 services" \
	km_wait_agent 'd["model"]["workloads"] == 12000 and d["model"]["services"] == 100' 30

# Every workload changes (its node's name) and the last 1,000 are gone: one response of ~1.5 MB,
# the 11,000 resources first, then the 1,000 removed names.
size=$(km_istiod send '{"cmd": "prepare", "workloads": 11000, "services": 100, "variant": 1}' |
	"$KM_PY" -c 'import json,sys; print(json.load(sys.stdin)["bytes"])')
check "the delta is over 1 MiB ($size bytes for the whole state)" test "$size" -gt 1100000
km_istiod send '{"cmd": "set-prepared"}' >/dev/null
check "a large delta's removals are applied after its resources: 11,000 workloads left" \
	km_wait_agent 'd["model"]["workloads"] == 11000 and d["istiod"]["address"]["nacks"] == 0 and d["istiod"]["address"]["acks"] >= 3' 30
check "the map writer holds the 11,000 workloads' endpoints, not 12,000" \
	rows_are endpoint "^endpoint" 11000
check "both large responses were applied while they arrived (streamed)" \
	test "$(dump 'd["istiod"]["address"]["streamed"]')" = 2
check "and say so in their metric" \
	km_metrics_has '^kmesh_xds_streamed_total{type="address"} 2$'
km_check_summary xds_large_response
