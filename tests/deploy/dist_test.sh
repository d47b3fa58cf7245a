#!/usr/bin/env bash
# dist_test.sh — `make dist` (mk/dist.sh): the release tarball unpacks into a tree whose programs
# run on the tarball's own loader and libraries (every library the started program loads comes
# from its lib/), report the chart's version, include the static CNI plugin, the chart and the
# units; and kmeshctl works as a kubectl plugin (`kubectl kmesh`, a real kubectl 1.31 finding
# kubectl-kmesh on PATH).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tests/lib/check.sh"
cd "$ROOT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DIST_DIR=$TMP/out bash mk/dist.sh 2>"$TMP/dist.err"
rc=$?
tarball=$(ls "$TMP"/out/kmesh-*-linux-*.tar.gz 2>/dev/null | head -1)
check "mk/dist.sh makes a tarball (rc $rc)" eval '[ $rc -eq 0 ] && [ -s "$tarball" ]' ||
	cat "$TMP/dist.err"
mkdir -p "$TMP/x" && tar -xzf "$tarball" -C "$TMP/x"
D=$(ls -d "$TMP"/x/kmesh-*/ | head -1)
D=${D%/}
app=$(sed -n 's/^appVersion: *"*\([^"]*\)"*$/\1/p' charts/kmesh/Chart.yaml)
for p in kmesh-map-writer kmesh-xds-agent kmesh-ipsec-agent kmesh-tunnel kmesh-cni-agent kmeshctl kubectl-kmesh; do
	v=$("$D/bin/$p" --version 2>&1 | awk '{print $2}' | tr -d ,)
	check "bin/$p --version runs from the tarball: the chart's $app ($v)" eval '[ "${v%%+*}" = "$app" ]'
done
only_own_libs() { # only_own_libs PROGRAM ARGS...: the started program's libraries all in $D/lib
	LD_DEBUG=libs "$@" 2>&1 >/dev/null | /usr/bin/python3 -c '
import re, sys
own = sys.argv[1].rstrip("/") + "/bin/../lib/"
lines = [l for l in sys.stdin if "calling init:" in l]
# the wrapper (sh, readlink, dirname) loads the system libc; the program is the process whose
# init calls include the tarball loader, from that call on
start = next(i for i, l in enumerate(lines) if own in l)
pid = lines[start].split(":")[0].strip()
mine = [l.split("calling init:")[1].strip() for l in lines[start:] if l.split(":")[0].strip() == pid]
bad = [p for p in mine if not p.startswith(own)]
assert len(mine) > 3 and not bad, bad or mine' "$D"
}
check "bin/kmeshctl loads only the tarball's libraries (none of the system's)" only_own_libs "$D/bin/kmeshctl" --version
check "bin/kmesh-map-writer too" only_own_libs "$D/bin/kmesh-map-writer" --version
check "bin/kmesh-cni is the static plugin, and runs" \
	eval '! readelf -l "$D/bin/kmesh-cni" | grep -q interpreter && CNI_COMMAND=VERSION "$D/bin/kmesh-cni" </dev/null | grep -q cniVersion'
check "the chart, the systemd units and the LICENSE are in it" \
	eval '[ -f "$D/charts/kmesh/Chart.yaml" ] && [ -f "$D/systemd/kmesh-map-writer.service" ] && [ -f "$D/LICENSE" ]'
check "the arm64 tarball's absence is said, not silent" grep -q "no aarch64 tarball" "$TMP/dist.err"
KUBECTL=$("$ROOT/mk/helm.sh" kubectl) || { echo "no kubectl"; km_check_summary dist; exit 1; }
check "a real kubectl finds the plugin on PATH (kubectl plugin list)" \
	eval 'PATH="$D/bin:$PATH" "$KUBECTL" plugin list 2>/dev/null | grep -q "$D/bin/kubectl-kmesh"'
out=$(PATH="$D/bin:$PATH" "$KUBECTL" kmesh --help 2>&1)
check "kubectl kmesh --help: kmeshctl's usage" grep -q "Operates kmesh" <<<"$out"
out=$(PATH="$D/bin:$PATH" "$KUBECTL" kmesh version -o json --map-writer-socket "$TMP/none.sock" --xds-socket "$TMP/none2.sock" --ipsec-socket "$TMP/none3.sock" --tunnel-socket "$TMP/none4.sock" 2>/dev/null)
check "kubectl kmesh version -o json: JSON with kmeshctl's own version" \
	/usr/bin/python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert "kmeshctl" in json.dumps(d), d' "$out"
km_check_summary dist
