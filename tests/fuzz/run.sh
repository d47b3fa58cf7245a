#!/usr/bin/env bash
# run.sh SECONDS TARGET... — `make fuzz` (and `make fuzz-smoke`, 3 s): each libFuzzer target for
# SECONDS from its kept corpus (tests/fuzz/corpus/NAME) and its work directory, as many at once
# as there are cores (FUZZ_JOBS): fuzzing measures nothing, so nothing is lost by sharing the
# machine. Each target's summary is printed in order; a crash, leak or sanitizer report fails
# the run, its log kept beside the target (NAME.log).
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=$1
shift
one() {
	local f=$1 secs=$2 corpus=tests/fuzz/corpus/$(basename "$1")
	mkdir -p "$(dirname "$f")/work-$(basename "$f")"
	"$f" -max_total_time="$secs" -print_final_stats=1 "$(dirname "$f")/work-$(basename "$f")" \
		$([ -d "$corpus" ] && echo "$corpus") >"$f.log" 2>&1
	echo $? >"$f.rc"
}
export -f one
for f in "$@"; do rm -f "$f.rc"; done # a target that did not run fails, not an earlier run's rc
printf '%s\n' "$@" | xargs -P "${FUZZ_JOBS:-$(nproc)}" -I{} bash -c 'one "$1" "$2"' _ {} "$secs"
failed=0
for f in "$@"; do
	echo "== $(basename "$f") for ${secs}s"
	grep -E 'stat::number_of_executed_units|ERROR|SUMMARY|Done' "$f.log"
	if [ "$(cat "$f.rc" 2>/dev/null)" != 0 ]; then
		echo "FAIL $(basename "$f"): see $f.log"
		failed=1
	fi
done
exit $failed
