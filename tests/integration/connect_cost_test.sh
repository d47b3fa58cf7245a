#!/usr/bin/env bash
# connect_cost_test.sh — a ceiling on what the programs on a connection's path cost, as a ratio to
# the reference program measured in the same run (bench/ref/ref_connect.bpf.c: the floor):
# connect4 + sockops + sock_release per connect (BPF_ENABLE_STATS), monitoring on (the default),
# 1,000 endpoints behind one VIP, the client pinned to one CPU. bench/connect.sh measures the
# same at scale for docs/performance.md; this keeps a change from silently costing the hot path.
# Needs root.
cd "$(dirname "$0")/../.."
source tests/lib/check.sh
if [[ "${KM_BIN:-}" == */san-bin ]]; then
	# sanitized daemons beside the programs load the machine's caches differently: the
	# ceilings are for the release build, which make integration checks
	echo "connect_cost: skipped with the sanitized daemons (checked by make integration)"
	exit 0
fi
ENDPOINTS=1000 ROUNDS=6 PER_ROUND=500
source bench/lib/connect_env.sh
set +e

# ROUNDS x PER_ROUND connects per path and run (was 1 x 200: too few for a ~100 ns floor).
# Measured at c29c933 on the 2-core test machine, 1,000 endpoints: 12.2-12.7x the floor through
# the VIP (the floor is only ~80 ns in tables this small; connection reports are most of the
# rest), 4.2-5.0x to a pod IP; the code before it (socket storage and state callbacks for
# monitoring) measured 15.4x and 6.4x in the same conditions. At 9098207: 8.6-10.8x and
# 3.2-4.0x over six runs (8.2-9.5x and 4.1-4.4x before the endpoint slot array, which changes
# little in tables this small: they fit in the cache; bench/connect.sh shows it at scale). The
# ceilings leave room for a noisy machine, not for a regression like waking the reader per
# report (+13 us) or the per-connection storage and state callbacks coming back.
VIP_CEILING=1200 # x100
POD_CEILING=550  # x100
# ratio ROW: the shipped programs' ns per connect over the floor's, x100 (integer)
ratio() {
	awk -F' *\\| *' -v row="$1" '$2 == row && $3 !~ /floor/ {s += $4} $2 == row && $3 ~ /floor/ {f = $4}
		END {if (f > 0) print int(100 * s / f); else print 999999}' <<<"$out"
}
# The best of three runs: interference (the other CPU, the ring's reader) only adds to a run's
# cost, and one run's ratio to a ~100 ns floor swung 8.4-14.7x on a busy machine for the same
# build; a regression raises every run.
x100() { printf '%d.%02d' $(($1 / 100)) $(($1 % 100)); }
vip=999999 pod=999999
for run in 1 2 3; do
	out=$(connect_run)
	[ $run = 1 ] && echo "$out" | grep '^| the VIP |\|^| an endpoint address'
	v=$(ratio "the VIP") p=$(ratio "an endpoint address (pod IP)")
	echo "run $run: shipped over floor: VIP $(x100 "$v")x, pod IP $(x100 "$p")x"
	[ "$v" -lt "$vip" ] && vip=$v
	[ "$p" -lt "$pod" ] && pod=$p
done
echo "shipped over floor, best of 3: VIP $(x100 "$vip")x, pod IP $(x100 "$pod")x"
check "every program on the path was measured (connect4, sockops, sock_release)" \
	eval '[ "$(grep -c "^| the VIP | \`\(connect4\|sockops\|sock_release\)\`" <<<"$out")" = 3 ]'
check "through the VIP: at most $(x100 $VIP_CEILING)x the floor" [ "$vip" -le "$VIP_CEILING" ]
check "to a pod IP: at most $(x100 $POD_CEILING)x the floor" [ "$pod" -le "$POD_CEILING" ]
km_check_summary connect_cost
