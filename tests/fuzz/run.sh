#!/usr/bin/env bash
# run.sh SECONDS TARGET... — `make fuzz` (and `make fuzz-smoke`, 3 s): each libFuzzer target for
# SECONDS from its kept corpus (tests/fuzz/corpus/NAME) and its work directory, as many at once
# as there are cores (FUZZ_JOBS): fuzzing measures nothing, so nothing is lost by sharing the
# machine. Each target's summary is printed in order; a crash, leak or sanitizer report fails
# the run, its log kept in build/fuzz/NAME.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=$1
shift
one() {
	local f=$1 secs=$2 name corpus
	name=$(basename "$f")
	corpus=tests/fuzz/corpus/$name
	mkdir -p "build/fuzz/work-$name"
	"$f" -max_total_time="$secs" -print_final_stats=1 "build/fuzz/work-$name" \
		$([ -d "$corpus" ] && echo "$corpus") >"build/fuzz/$name.log" 2>&1
	echo $? >"build/fuzz/$name.rc"
}
export -f one
printf '%s\n' "$@" | xargs -P "${FUZZ_JOBS:-$(nproc)}" -I{} bash -c 'one "$1" "$2"' _ {} "$secs"
failed=0
for f in "$@"; do
	name=$(basename "$f")
	echo "== $name for ${secs}s"
	grep -E 'stat::number_of_executed_units|ERROR|SUMMARY|Done' "build/fuzz/$name.log"
	if [ "$(cat "build/fuzz/$name.rc" 2>/dev/null)" != 0 ]; then
		echo "FAIL $name: see build/fuzz/$name.log"
		failed=1
	fi
done
exit $failed
