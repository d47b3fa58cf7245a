#!/usr/bin/env bash
# cni_cost_test.sh — a ceiling on what a pod's CNI call costs, as ratios to /bin/true started the
# same way in the same run (bench/cni_add.sh, 60 rounds), so the plugin cannot silently grow
# back what issue 27 took out of it (libcurl's start, API requests on the ADD path: ADD was 14x
# /bin/true's p50, the plugin's start alone 6x). Needs root.
cd "$(dirname "$0")/../.."
source tests/lib/check.sh
if [[ "${KM_BIN:-}" == */san-bin ]]; then
	echo "cni_cost: skipped with the sanitized daemons (checked by make integration)"
	exit 0
fi
out=$(COUNT=60 bash bench/cni_add.sh 2>&1)
rc=$?
p50() { awk -F'|' -v r="$1" 'index($2, r) {gsub(/ /, "", $4); print $4; exit}' <<<"$out"; }
ratio() { awk -F'|' -v r="$1" 'index($2, r) {gsub(/ /, "", $7); print $7; exit}' <<<"$out"; }
check "bench/cni_add.sh ran (rc $rc)" eval '[ $rc -eq 0 ] && [ -n "$(p50 "/bin/true")" ]'
[ $KM_FAIL -eq 0 ] || { echo "$out" | tail -20; km_check_summary cni_cost; exit 1; }
echo "$out" | grep -E '^\| (baseline|VERSION|\*\*ADD|\*\*DEL)'
# Measured on the 2-core test machine: the plugin's start 0.88-0.91x /bin/true's, ADD of an
# enrolled pod 1.95-2.05x, DEL 1.8-1.9x. The ceilings leave room for a noisy machine, not for
# a shared library or an API request on the path (each ~3-5x more).
check "the plugin starts within 1.5x /bin/true's time ($(ratio "VERSION")x)" \
	eval 'awk -v r="$(ratio "VERSION")" "BEGIN {exit !(r <= 1.5)}"'
check "ADD of an enrolled pod within 3.5x /bin/true's time ($(ratio "ADD, pod enrolled")x)" \
	eval 'awk -v r="$(ratio "ADD, pod enrolled")" "BEGIN {exit !(r <= 3.5)}"'
check "DEL within 3.5x /bin/true's time ($(ratio "DEL of that pod")x)" \
	eval 'awk -v r="$(ratio "DEL of that pod")" "BEGIN {exit !(r <= 3.5)}"'
km_check_summary cni_cost
