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
prog_ns() { # prog_ns PROGRAM OUTPUT: its ns per VIP connect
	awk -F'|' -v p="\`$1\`" '/the VIP/ && index($3, p) {gsub(/ /, "", $4); print $4}' <<<"$2"
}
row() { # row off|on OUTPUT P50 RATIO: sockops and authz_ingress only when attached (on demand)
	local c s r i
	c=$(prog_ns connect4 "$2") s=$(prog_ns sockops "$2") r=$(prog_ns sock_release "$2")
	i=$(prog_ns authz_ingress "$2")
	echo "| $1 | $3 | $4 | $c | ${s:--} | $r | ${i:--} | $((c + ${s:-0} + r + ${i:-0})) |"
}

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
connect4 reports the original destination of each connection it rewrites and sock_release each
close, one small ring-buffer record each, and the xDS agent counts them (sockops, which would
report establishments, is attached only while the access log asks for them: here it is off).
Each run's ratio is against the direct connects with no program measured in the same run; the
programs' times are \`BPF_ENABLE_STATS\` per VIP connect (\`-\`: not attached).

| monitoring | p50 through the VIP (us) | ratio to direct (p50) | connect4 ns | sockops ns | sock_release ns | authz_ingress ns | every program |
|---|---|---|---|---|---|---|---|
$(row off "$off" "$off_p50" "$off_ratio")
$(row on "$on" "$on_p50" "$on_ratio")

The agent received $reports connection reports; $lost were lost.
MD
