#!/usr/bin/env bash
# passive_cost_test.sh — a ceiling on what an enrolled pod pays for the connections it accepts:
# every program that runs per accepted connection (BPF_ENABLE_STATS: the authorization at the
# socket lookup and sock_release; sockops and authz_ingress are not attached while nothing needs
# them), monitoring on (the default), over the floors measured in the same run
# (bench/ref/ref_accept.bpf.c: an sk_lookup program allowing by one hash lookup, and the least
# close report), and no program on the packets it receives. bench/passive.sh measures the same
# for docs/performance.md; this keeps a change from silently costing the accepting side.
# Needs root.
cd "$(dirname "$0")/../.."
source tests/lib/check.sh
if [[ "${KM_BIN:-}" == */san-bin ]]; then
	echo "passive_cost: skipped with the sanitized daemons (checked by make integration)"
	exit 0
fi
# Measured on the 2-core test machine (issue 50): 1.7-2.9x the floor with a close report over
# runs (before it, with sockops four times and a socket-storage allocation per accept and
# authz_ingress on every packet, about 7-8 us per accepted connection, twice what it is now).
# The ceiling leaves room for a noisy machine; sockops or authz_ingress coming back onto the path
# fails the checks on which programs ran.
CEILING=350 # x100, every program over ref_lookup + ref_release
best=999999 out=
for run in 1 2; do
	o=$(ROUNDS=2 PER_ROUND=300 BULK_MB=32 bash bench/passive.sh) || { echo "$o"; break; }
	[ $run = 1 ] && out=$o && grep '^| `\|^| every program\|^Per received' <<<"$o"
	r=$(awk -F' *\\| *' '$2 == "every program, monitoring on" {print int(100 * $7 + 0.5)}' <<<"$o")
	echo "run $run: every program per accepted connection: $(printf '%d.%02d' $((r / 100)) $((r % 100)))x the floor with a close report"
	[ -n "$r" ] && [ "$r" -lt "$best" ] && best=$r
done
check "every program an accepted connection runs was measured, beside both floors" \
	eval 'grep -q "^| \`authz_lookup\` |" <<<"$out" && grep -q "^| \`sock_release\` |" <<<"$out" && grep -q "^| \`ref_lookup\` (the floor) |" <<<"$out" && grep -q "^| \`ref_release\`" <<<"$out"'
check "no sockops program runs for an accepted connection (nothing needs it)" \
	eval '! grep -q "^| \`sockops\` |" <<<"$out"'
check "no program runs on the packets an enrolled pod receives" \
	eval '! grep -q "^| \`authz_ingress\` |" <<<"$out" && grep -q "^Per received packet.*: no program runs" <<<"$out"'
check "every program per accepted connection: at most $(printf "%d.%02d" $((CEILING / 100)) $((CEILING % 100)))x the floor with a close report" \
	[ "$best" -le "$CEILING" ]
km_check_summary passive_cost
