#!/usr/bin/env bash
# help_test.sh — every binary's --help, and each kmeshctl command's, as an operator reads it:
# exits 0, says how to use it, and gives each default once (never a "(default: )" with nothing
# after it, never a line that says its default twice); and every binary's --version is the
# chart's appVersion (the image's default tag) with the commit as semver build metadata.
# Takes a second.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tests/lib/check.sh"
cd "$ROOT"

helps=()
for b in build/bin/kmesh-map-writer build/bin/kmesh-xds-agent build/bin/kmesh-ipsec-agent \
	build/bin/kmesh-cni build/bin/kmeshctl; do
	helps+=("$b --help")
done
for c in version ready enroll unenroll log dump inject monitoring accesslog authz secret waypoint; do
	helps+=("build/bin/kmeshctl $c --help")
done

for h in "${helps[@]}"; do
	out=$($h 2>&1)
	rc=$?
	check "$h: exits 0 and says how to use it" eval '[ $rc -eq 0 ] && grep -qi "usage" <<<"$out"'
	check "$h: no empty default" eval '! grep -q "(default: )" <<<"$out"'
	check "$h: no line gives its default twice" eval '! grep -q "(default.*(default" <<<"$out"'
done
app=$(sed -n 's/^appVersion: *"*\([^"]*\)"*$/\1/p' charts/kmesh/Chart.yaml)
for b in build/bin/kmesh-map-writer build/bin/kmesh-xds-agent build/bin/kmesh-ipsec-agent \
	build/bin/kmesh-cni build/bin/kmeshctl; do
	v=$($b --version 2>&1 | awk '{print $2}' | tr -d ,)
	check "$b --version: the chart's $app, then the build ($v)" \
		eval '[[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+\+[0-9A-Za-z.-]+$ ]] && [ "${v%%+*}" = "$app" ]'
done
km_check_summary help
