#!/usr/bin/env bash
# connect_kinds.sh — connect() by kind of service, each a fresh mesh measured against its own
# same-run baseline and floor (bench/connect.sh): a uniform, a weighted, a P2C and a waypoint
# service with KINDS_ENDPOINTS (10000) endpoints, then a realistic mix: MIX_SERVICES (10000)
# services over MIX_ENDPOINTS (100000) endpoints, VIPs drawn by Zipf popularity, MIX_OUTSIDE (20)
# percent of the connects to addresses outside the mesh. Prints one summary table and the mix's
# full section. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${KINDS_ENDPOINTS:-10000}
mix_services=${MIX_SERVICES:-10000}
mix_endpoints=${MIX_ENDPOINTS:-100000}
mix_outside=${MIX_OUTSIDE:-20}
export ROUNDS=${ROUNDS:-20}

# row LABEL OUTPUT: one summary row from a bench/connect.sh section
row() {
	awk -F' *\\| *' -v label="$1" '
		/^\| through the VIP/ {p50 = $4; ratio = $8}
		/^\| reference program/ {fratio = $8}
		/^\| the VIP \| `connect4`/ {c = $4}
		/^\| the VIP \| `sockops`/ {s = $4; sr = $5}
		/^\| the VIP \| `sock_release`/ {r = $4}
		/^\| the VIP \| `ref_connect4`/ {f = $4}
		END {printf "| %s | %s | %s (%s) | %s | %s | %.1fx | %s | %s |\n", label, c, s, sr, r, f,
			(f > 0 ? (c + s + r) / f : 0), ratio, fratio}' <<<"$2"
}

rows=() failed=0
for kind in plain weighted p2c waypoint; do
	out=$(SERVICE_KIND=$kind ENDPOINTS=$n bash bench/connect.sh) || { failed=1; rows+=("| $kind | failed |"); continue; }
	rows+=("$(row "$kind, $n endpoints" "$out")")
done
mix=$(SERVICES=$mix_services OUTSIDE_PERCENT=$mix_outside ENDPOINTS=$mix_endpoints bash bench/connect.sh) ||
	{ failed=1; mix="the mix failed"; }
rows+=("$(row "mix: $mix_services services, Zipf, $mix_outside% outside" "$mix")")

echo "## connect() by kind of service (issue 24's bench cases)"
echo
echo "Command: \`make bench\` (runs \`bench/connect_kinds.sh\`; \`KINDS_ENDPOINTS=$n\`,"
echo "\`MIX_SERVICES=$mix_services\`, \`MIX_ENDPOINTS=$mix_endpoints\`, \`MIX_OUTSIDE=$mix_outside\`, \`ROUNDS=$ROUNDS\`)."
echo "Each row is one run of \`bench/connect.sh\` in a fresh mesh (\`SERVICE_KIND\`, \`SERVICES\`,"
echo "\`OUTSIDE_PERCENT\` in bench/lib/connect_env.sh), monitoring on: ns per VIP connect from"
echo "\`BPF_ENABLE_STATS\`, the floor (\`ref_connect4\`, the same VIPs and endpoints) and the p50"
echo "ratios over the direct connects with no program, all measured in that run. weighted: endpoint"
echo "weights 1..4 (a search over cumulative weights); p2c: power of two choices over live"
echo "connection counts; waypoint: every connection goes to the service's waypoint pod on its data"
echo "port (the socket record and the sockhash insert the TLV needs); the mix: the k-th most"
echo "popular service drawn 1/k as often as the first, the rest to 10.200/16 (no frontend)."
echo
echo "| service | connect4 | sockops (calls) | sock_release | the floor | all three over the floor | p50 ratio | the floor's p50 ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
echo
echo "The mix in full:"
echo
sed 's/^## /### /' <<<"$mix"
exit $failed
