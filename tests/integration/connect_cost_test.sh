#!/usr/bin/env bash
# connect_cost_test.sh — a ceiling on what the programs on a connection's path cost, as a ratio to
# the reference programs measured in the same run (bench/ref/ref_connect.bpf.c: the floor; and
# bench/ref/ref_accept.bpf.c's close report): every program that runs for the client's connection
# per connect (BPF_ENABLE_STATS), monitoring on (the default),
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
# The sum of every program that runs for the client's connection (connect4, sock_release, and
# sockops or authz_ingress were they attached: here nothing needs them), monitoring on, over
# two floors measured in the same run: ref_connect4 alone, and ref_connect4 + ref_release (the
# least a close report can be). History: at c29c933 (connect4 + 5 sockops runs + sock_release)
# 12.2-12.7x ref_connect4 through the VIP, 4.2-5.0x to a pod IP; at 2a45ed5 8.6-10.8x and
# 3.2-4.0x. Without sockops on the path (issue 50), 1,000 endpoints, best of three: see the
# figures printed below; the ceilings leave room for a noisy machine, not for sockops coming
# back (+5 runs) or a wakeup per report (+13 us).
VIP_CEILING=500       # x100, every program over ref_connect4, through the VIP
POD_CEILING=300       # x100, ... to a pod IP
VIP_CLOSE_CEILING=260 # x100, every program over ref_connect4 + ref_release, through the VIP
POD_CLOSE_CEILING=175 # x100, ... to a pod IP
# ratio ROW COLUMN: the summary row of that destination with monitoring on, its ratio column
# (6: over the floor, 8: over the floor with a close report), x100 (integer)
ratio() {
	awk -F' *\\| *' -v row="$1" -v col="$2" '$2 == row && $3 == "on" {r = $col}
		END {if (r > 0) print int(100 * r + 0.5); else print 999999}' <<<"$out"
}
# The best of three runs: interference (the other CPU, the ring's reader) only adds to a run's
# cost, and one run's ratio to a ~100 ns floor swung 8.4-14.7x on a busy machine for the same
# build; a regression raises every run.
x100() { printf '%d.%02d' $(($1 / 100)) $(($1 % 100)); }
vip=999999 pod=999999 vipc=999999 podc=999999 sockops_rows=0
for run in 1 2 3; do
	out=$(connect_run)
	[ $run = 1 ] && echo "$out" | grep '^| the VIP |\|^| an endpoint address\|^| a pod IP |'
	v=$(ratio "the VIP" 6) p=$(ratio "a pod IP" 6) vc=$(ratio "the VIP" 8) pc=$(ratio "a pod IP" 8)
	echo "run $run: every program over the floor: VIP $(x100 "$v")x, pod IP $(x100 "$p")x;" \
		"over the floor with a close report: VIP $(x100 "$vc")x, pod IP $(x100 "$pc")x"
	[ "$v" -lt "$vip" ] && vip=$v
	[ "$p" -lt "$pod" ] && pod=$p
	[ "$vc" -lt "$vipc" ] && vipc=$vc
	[ "$pc" -lt "$podc" ] && podc=$pc
	sockops_rows=$((sockops_rows + $(grep -c '^| the VIP | `sockops`' <<<"$out")))
done
echo "best of 3: VIP $(x100 "$vip")x, pod IP $(x100 "$pod")x the floor;" \
	"$(x100 "$vipc")x, $(x100 "$podc")x the floor with a close report"
check "every program on the path was measured (connect4 and sock_release; the floors)" \
	eval '[ "$(grep -c "^| the VIP | \`\(connect4\|sock_release\|ref_connect4\|ref_release\)\`" <<<"$out")" = 4 ]'
check "sockops is not on the path of a plain service's connections (nothing needs it)" [ "$sockops_rows" = 0 ]
check "through the VIP: at most $(x100 $VIP_CEILING)x the floor" [ "$vip" -le "$VIP_CEILING" ]
check "to a pod IP: at most $(x100 $POD_CEILING)x the floor" [ "$pod" -le "$POD_CEILING" ]
check "through the VIP: at most $(x100 $VIP_CLOSE_CEILING)x the floor with a close report" [ "$vipc" -le "$VIP_CLOSE_CEILING" ]
check "to a pod IP: at most $(x100 $POD_CLOSE_CEILING)x the floor with a close report" [ "$podc" -le "$POD_CLOSE_CEILING" ]
km_check_summary connect_cost
