#!/usr/bin/env bash
# help_test.sh — every binary's --help, and each kmeshctl command's, as an operator reads it:
# exits 0, says how to use it, and gives each default once (never a "(default: )" with nothing
# after it, never a line that says its default twice); and every binary's --version is the
# chart's appVersion (the image's default tag) with the commit as semver build metadata; the
# daemons' --log-format json lines are JSON objects.
# Takes a second.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tests/lib/check.sh"
cd "$ROOT"

helps=()
for b in build/bin/kmesh-map-writer build/bin/kmesh-xds-agent build/bin/kmesh-ipsec-agent \
	build/bin/kmesh-tunnel build/bin/kmesh-cni build/bin/kmesh-cni-agent "build/bin/kmesh-cni-agent install" \
	"build/bin/kmesh-cni-agent uninstall" build/bin/kmeshctl; do
	helps+=("$b --help")
done
for c in version ready enroll unenroll log dump inject monitoring accesslog authz secret waypoint completion; do
	helps+=("build/bin/kmeshctl $c --help")
done

for h in "${helps[@]}"; do
	out=$($h 2>&1)
	rc=$?
	check "$h: exits 0 and says how to use it" eval '[ $rc -eq 0 ] && grep -qi "usage" <<<"$out"'
	check "$h: no empty default" eval '! grep -q "(default: )" <<<"$out"'
	check "$h: no line gives its default twice" eval '! grep -q "(default.*(default" <<<"$out"'
done
for b in build/bin/kmesh-map-writer build/bin/kmesh-xds-agent build/bin/kmesh-ipsec-agent \
	build/bin/kmesh-tunnel "build/bin/kmesh-cni-agent install"; do
	check "$b: --log-format text|json in its --help" eval '$b --help 2>&1 | grep -q -- "--log-format FORMAT"'
done
# a daemon's lines with --log-format json: objects with Istio's fields, nothing else on stderr
for cmd in "build/bin/kmesh-ipsec-agent --log-format json" \
	"build/bin/kmesh-xds-agent --log-format json --config-file /nonexistent/mesh.json --map-writer-socket /nonexistent/mw.sock --admin-socket /nonexistent/a.sock --metrics-address="; do
	out=$(timeout 10 $cmd 2>&1 >/dev/null)
	check "${cmd%% *} --log-format json: every line one JSON object with time, level, scope, msg" \
		eval '[ -n "$out" ] && /usr/bin/python3 -c "
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    assert set(o) == {\"time\", \"level\", \"scope\", \"msg\"} and o[\"level\"] == \"error\", o
" <<<"$out"'
done
KMESH_LOG_FORMAT=yaml build/bin/kmesh-ipsec-agent >/dev/null 2>"${TMPDIR:-/tmp}/km-help-$$.err"
rc=$?
check "a bad log format is refused with exit 2, naming the choices" \
	eval '[ $rc -eq 2 ] && grep -q "not text or json" "${TMPDIR:-/tmp}/km-help-$$.err"'
rm -f "${TMPDIR:-/tmp}/km-help-$$.err"
app=$(sed -n 's/^appVersion: *"*\([^"]*\)"*$/\1/p' charts/kmesh/Chart.yaml)
for b in build/bin/kmesh-map-writer build/bin/kmesh-xds-agent build/bin/kmesh-ipsec-agent \
	build/bin/kmesh-cni build/bin/kmesh-cni-agent build/bin/kmeshctl; do
	v=$($b --version 2>&1 | awk '{print $2}' | tr -d ,)
	check "$b --version: the chart's $app, then the build ($v)" \
		eval '[[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+\+[0-9A-Za-z.-]+$ ]] && [ "${v%%+*}" = "$app" ]'
done
km_check_summary help
