#!/usr/bin/env bash
# connect.sh — connect() through a service VIP with ENDPOINTS endpoints (loaded through the real
# xDS agent from a config file) vs. direct connects with no program attached, plus the programs'
# own run time (see bench/connect_bench.c). Runs once per scale in CONNECT_SCALES (default
# 10000 100000 1000000; ENDPOINTS=N runs only N), each in a fresh mesh, then sums the ratios
# up. ROUNDS, PER_ROUND override. Prints markdown. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${ENDPOINTS:-}" ]; then
	rows=() failed=0
	for n in ${CONNECT_SCALES:-10000 100000 1000000}; do
		out=$(ENDPOINTS=$n bash bench/connect.sh) || { failed=1; out="connect() with $n endpoints: failed"; }
		echo "$out"
		echo
		# the p50 ratio and the round medians' spread of the VIP row, and the connect4 run time
		rows+=("| $n | $(awk -F' *\\| *' '/^\| through the VIP/ {print $7 " | " $4 " | " $8}' <<<"$out") | $(awk -F' *\\| *' '/^\| the VIP \| `connect4`/ {print $4}' <<<"$out") | $(awk -F' *\\| *' '/^\| the VIP \| `ref_connect4`/ {print $4}' <<<"$out") |")
	done
	echo "## connect() through a VIP by number of endpoints: summary"
	echo
	echo "From the sections above (each scale a fresh mesh; ratio = p50 through the VIP over the"
	echo "p50 of direct connects with no program, measured in the same run)."
	echo
	echo "| endpoints | round medians min / max (us) | p50 through the VIP (us) | ratio (p50) | connect4 ns per connect | the floor's ns per connect |"
	echo "|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "Goals (issue 24): ratio <= 1.05; connect4 <= 250 ns per VIP connect at every scale. The floor is"
	echo "bench/ref/ref_connect.bpf.c, measured in the same run."
	exit $failed
fi
source bench/lib/connect_env.sh
connect_run
