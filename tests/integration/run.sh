#!/usr/bin/env bash
# run.sh — runs every integration test (tests/integration/*_test.sh). Needs root: the tests make
# network namespaces, a sub-cgroup and a bpffs mount of their own, and remove them afterwards.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" -ne 0 ]; then
	echo "integration tests need root (network namespaces, cgroups, BPF)" >&2
	exit 1
fi
failed=0
for t in tests/integration/*_test.sh; do
	echo "== $t"
	bash "$t" || failed=1
done
exit $failed
