#!/usr/bin/env bash
# monitoring.sh — what connection reports (metrics, access log) cost connect(): connects through
# a VIP with ENDPOINTS (1000) endpoints with monitoring off, then on (kmeshctl monitoring, in the
# same mesh, the xDS agent subscribed and counting every connection), each run against the
# direct baseline measured in the same run (bench/connect_bench.c). Prints a markdown section.
# Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
ENDPOINTS=${ENDPOINTS:-1000}
ROUNDS=${ROUNDS:-40}
PER_ROUND=${PER_ROUND:-1000}
AGENT_LOG_LEVEL=info # its metrics port is logged at info
source bench/lib/connect_env.sh
ctl() { build/bin/kmeshctl --map-writer-socket "$KM_SOCKET" "$@" >/dev/null; }
vip_row() { # p50 and ratio of the VIP row
	awk -F'|' '/through the VIP, programs attached/ {gsub(/ /, "", $4); gsub(/ /, "", $8); print $4, $8}' <<<"$1"
}
sockops_ns() { awk -F'|' '/the VIP/ && /`sockops`/ {gsub(/ /, "", $4); print $4}' <<<"$1"; }

ctl monitoring disable
off=$(connect_run)
ctl monitoring enable
on=$(connect_run)
read -r off_p50 off_ratio <<<"$(vip_row "$off")"
read -r on_p50 on_ratio <<<"$(vip_row "$on")"
reports=$(km_metrics | awk '$1 == "kmesh_telemetry_reports_total" {print $2}')
lost=$(km_metrics | awk '$1 == "kmesh_telemetry_reports_lost_total" {print $2}')

cat <<MD
## Connection reports (monitoring) on connect()

Command: \`make bench\` (runs \`bench/monitoring.sh\`; \`ENDPOINTS=$ENDPOINTS\`, \`ROUNDS=$ROUNDS\`,
\`PER_ROUND=$PER_ROUND\`). The mesh of \`bench/connect.sh\` with $ENDPOINTS endpoints; connect_bench
runs twice in it, monitoring switched off and then on with \`kmeshctl monitoring\`. With it on,
sockops reports each connection at establishment (inside connect(), on loopback) and at its
reset, and the xDS agent counts them. Each run's ratio is against the direct connects with no
program measured in the same run.

| monitoring | p50 through the VIP (us) | ratio to direct (p50) | sockops ns per connect |
|---|---|---|---|
| off | $off_p50 | $off_ratio | $(sockops_ns "$off") |
| on | $on_p50 | $on_ratio | $(sockops_ns "$on") |

The agent received $reports connection reports; $lost were lost.
MD
