#!/usr/bin/env bash
# run.sh — runs every integration test (tests/integration/*_test.sh). Needs root: the tests make
# network namespaces, a sub-cgroup and a bpffs mount of their own, and remove them afterwards.
# With --sanitized the daemons are the ASan+UBSan builds (build/san-bin) and any sanitizer
# report, including leaks found at exit, fails the run. --cost runs only the tests that hold
# cost ceilings (*_cost_test.sh: CPU measured against same-run baselines, so they run alone),
# --no-cost all the others.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" -ne 0 ]; then
	echo "integration tests need root (network namespaces, cgroups, BPF)" >&2
	exit 1
fi
reports= only=
for a in "$@"; do
	case $a in
	--cost) only=cost ;;
	--no-cost) only=no-cost ;;
	esac
done
if [ "${1:-}" = --sanitized ]; then
	reports=$(mktemp -d /tmp/kmesh-san.XXXXXX)
	chmod 777 "$reports" # the agent runs as uid 65534
	export KM_BIN=$PWD/build/san-bin
	export ASAN_OPTIONS=detect_leaks=1:log_path=$reports/asan
	export UBSAN_OPTIONS=print_stacktrace=1:log_path=$reports/ubsan
	echo "(daemons under ASan+UBSan)"
fi
failed=0
start=$(date +%s)
for t in tests/integration/*_test.sh; do
	case $t in *_cost_test.sh) cost=1 ;; *) cost=0 ;; esac
	[ "$only" = cost ] && [ $cost = 0 ] && continue
	[ "$only" = no-cost ] && [ $cost = 1 ] && continue
	echo "== $t"
	t0=$(date +%s)
	bash "$t" || failed=1
	echo "== $t took $(($(date +%s) - t0)) s"
done
echo "== integration tests took $(($(date +%s) - start)) s"
if [ -n "$reports" ]; then
	if ls "$reports"/* >/dev/null 2>&1; then
		echo "sanitizer reports:" >&2
		head -n 40 "$reports"/* >&2
		failed=1
	fi
	rm -rf "$reports"
fi
exit $failed
