#!/usr/bin/env bash
# tunnel_kernel.sh — the kernel path with the tunnel on and off (issue 48): the only thing the
# tunnel changes in the kernel is km_hbone, the addresses whose 15008 it serves, which the SYN
# authorization consults for that port only. Runs bench/passive.sh (an enrolled server accepting
# connections from another pod: authz at the socket lookup) and bench/connect.sh (a client through
# a VIP with ENDPOINTS endpoints) with HBONE=off and HBONE=on (the pod's address in km_hbone),
# alternating, RUNS times each; every run's ratio is to its own same-run baseline. ROUNDS,
# PER_ROUND, ENDPOINTS, RUNS override. Prints markdown. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-2}
export ROUNDS=${ROUNDS:-10} PER_ROUND=${PER_ROUND:-500} BULK_MB=${BULK_MB:-64}
export ENDPOINTS=${ENDPOINTS:-10000}
declare -A passive=() lookup=() connect=() connect4=()
for r in $(seq 1 "$RUNS"); do
	for h in off on; do
		out=$(HBONE=$h bash bench/passive.sh)
		passive[$h]+=" $(awk -F' *\\| *' '/^\| enrolled pod \| [0-9]+ \|/ {print $7}' <<<"$out")"
		lookup[$h]+=" $(awk -F' *\\| *' '/^\| `authz_lookup`/ {print $3}' <<<"$out")"
		out=$(HBONE=$h bash bench/connect.sh)
		connect[$h]+=" $(awk -F' *\\| *' '/^\| through the VIP/ {print $8}' <<<"$out")"
		connect4[$h]+=" $(awk -F' *\\| *' '/^\| the VIP \| `connect4`/ {print $4}' <<<"$out")"
	done
done
list() { sed 's/^ //; s/ / \/ /g' <<<"$1"; }
echo "## The kernel path with the tunnel on and off (issue 48)"
echo
echo "Command: \`bash bench/tunnel_kernel.sh\` (\`RUNS=$RUNS\`, \`ROUNDS=$ROUNDS\`, \`PER_ROUND=$PER_ROUND\`,"
echo "\`ENDPOINTS=$ENDPOINTS\`). The tunnel changes one thing in the kernel: km_hbone, the pod"
echo "addresses whose 15008 it serves, which the SYN authorization reads for that port only. Each"
echo "run is a fresh mesh of \`bench/passive.sh\` (an enrolled server accepting from another pod)"
echo "or \`bench/connect.sh\` (a client through a VIP), with the pod's address in km_hbone (on)"
echo "or not (off), runs alternating; every ratio is to the baseline of its own run (no program)."
echo
echo "| figure, run by run | tunnel off | tunnel on |"
echo "|---|---|---|"
echo "| accepted connections: connect() p50, enrolled server / not enrolled | $(list "${passive[off]}") | $(list "${passive[on]}") |"
echo "| accepted connections: \`authz_lookup\` ns per connection | $(list "${lookup[off]}") | $(list "${lookup[on]}") |"
echo "| client: connect() p50 through the VIP / direct, no program | $(list "${connect[off]}") | $(list "${connect[on]}") |"
echo "| client: \`connect4\` ns per VIP connect | $(list "${connect4[off]}") | $(list "${connect4[on]}") |"
echo
echo "Expected: no difference beyond the runs' spread (the port is compared before any lookup; the"
echo "client's programs do not read km_hbone)."
