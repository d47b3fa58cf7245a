# check.sh — assertions for the shell integration tests. Sourced. Ends with km_check_summary,
# which prints "<name>: N passed, M failed" and returns non-zero on any failure.
KM_PASS=0
KM_FAIL=0

check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then
		KM_PASS=$((KM_PASS + 1))
		echo "ok   - $what"
	else
		KM_FAIL=$((KM_FAIL + 1))
		echo "FAIL - $what"
	fi
}

says() { # says TEXT COMMAND...: COMMAND's output contains TEXT. The output is read to its end
	# before it is searched: `cmd | grep -q` under pipefail fails whenever grep exits at a match
	# while cmd still writes (ip prints one write per object), which made checks flaky.
	local out
	out=$("${@:2}") || return 1
	grep -qF -- "$1" <<<"$out"
}

lacks() { # lacks TEXT COMMAND...: COMMAND succeeds and its output does not contain TEXT (a
	# command that fails proves nothing about what it would have printed)
	local out
	out=$("${@:2}") || return 1
	! grep -qF -- "$1" <<<"$out"
}

count_of() { # count_of ANSWER < client.py output (the whole answer, spaces included)
	awk -v n="$1" '{a = $0; sub(/^[0-9]+ /, "", a)} a == n {c = $1} END {print c + 0}'
}

within() { # within VALUE LOW HIGH
	[ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
}

km_check_summary() { # km_check_summary NAME
	echo "$1: $KM_PASS passed, $KM_FAIL failed"
	[ $KM_FAIL -eq 0 ]
}
