#!/usr/bin/env bash
# demo_test.sh — `make demo` as a new user sees it (issue 47, item 3): the guided tour runs to
# its end with every step's result, says what the code does (step 3: the denied connection is
# refused at once, ECONNREFUSED, not a dropped SYN), and ends clean: its last line is "demo done"
# and no shell noise ("line N: PID Killed ..." from background jobs killed at cleanup) follows.
# The demo makes its own names (kmdemoPID); it leaves nothing behind, and the test checks that.
set -uo pipefail
source "$(dirname "$0")/../lib/check.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

if [[ "${KM_BIN:-}" == */san-bin ]]; then
	# the tour's daemons and paths are the other integration tests', run under the sanitizers
	# there; its words are checked once
	echo "demo: skipped with the sanitized daemons (checked by make integration)"
	exit 0
fi
out=$(mktemp /tmp/kmesh-demo-test.XXXXXX)
trap 'rm -f "$out"' EXIT
bash "$ROOT/demo/run.sh" >"$out" 2>&1
rc=$?
check "the demo exits 0" test "$rc" = 0
check "it ends with its last words, nothing after them" \
	eval '[[ "$(tail -n 1 "$out")" == *"demo done; everything it made is removed now" ]]'
check "no shell noise anywhere (a job killed at cleanup: 'line N: PID Killed')" \
	eval '! grep -nE "line [0-9]+: +[0-9]+ +(Killed|Terminated)|Killed +km_in_pod|: No such file|command not found" "$out"'
check "step 1: the VIP's connections spread over web-a, web-b and web-c" \
	eval 'grep -qE "^ +web-a +[0-9]+ " "$out" && grep -qE "^ +web-b +[0-9]+ " "$out" && grep -qE "^ +web-c +[0-9]+ " "$out"'
check "step 3: the denied client sees ECONNREFUSED, and the words say so" \
	eval 'grep -qE "^ +3 error:ECONNREFUSED" "$out" && sed -n "/=== 3\\./,/client -> web-c/p" "$out" | grep -q "ECONNREFUSED"'
check "... and no longer say the SYN is dropped (that is the fallback's behaviour, not this)" \
	eval '! grep -q "drops the SYN" "$out"'
check "step 5: the restarts lost no connection" grep -qE "result: [1-9][0-9]* connections, 0 failed" "$out"
check "nothing left behind: no kmdemo namespace" eval '! ip netns list | grep -q "^kmdemo"'
[ $KM_FAIL -eq 0 ] || cat "$out"
km_check_summary demo
