#!/usr/bin/env bash
# plots_test.sh — the plots of docs/performance.md (bench/lib/plots.sh, gnuplot): drawn from the
# committed page into a temporary directory, each an SVG that parses and has its series; the
# page links the committed copies; a page without the tables is refused, not drawn empty.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tests/lib/check.sh"
cd "$ROOT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

check "bench/lib/plots.sh draws both plots from docs/performance.md" \
	eval 'bash bench/lib/plots.sh docs/performance.md "$TMP" 2>"$TMP/err" || { cat "$TMP/err"; false; }'
svg_ok() { # svg_ok FILE MIN-PATHS WORD...: parses as XML, has MIN-PATHS paths, and names each WORD
	/usr/bin/python3 - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
f, n, words = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
root = ET.parse(f).getroot()
paths = [e for e in root.iter() if e.tag.endswith("path")]
text = " ".join(t for e in root.iter() for t in [e.text or ""])
assert len(paths) >= n, "%d paths" % len(paths)
for w in words:
    assert w in text, "no %r in %s" % (w, f)
PY
}
check "connect-latency.svg: an SVG with bars for direct, the VIP and the floor at 10k, 100k, 1M" \
	svg_ok "$TMP/connect-latency.svg" 30 p50 p90 p99 direct "via the VIP" floor 10k 100k 1M
check "full-sync.svg: an SVG with both series over the scales" \
	svg_ok "$TMP/full-sync.svg" 6 "push -> applied" "agent peak RSS" workloads
check "docs/performance.md links both, and both are committed" \
	eval 'grep -q "(plots/connect-latency.svg)" docs/performance.md && grep -q "(plots/full-sync.svg)" docs/performance.md &&
	      [ -s docs/plots/connect-latency.svg ] && [ -s docs/plots/full-sync.svg ]'
printf '# Performance\n\nno tables here\n' >"$TMP/empty.md"
out=$(bash bench/lib/plots.sh "$TMP/empty.md" "$TMP/none" 2>&1)
rc=$?
check "a page without the tables: exit 1, saying which table is missing" \
	eval '[ $rc -eq 1 ] && grep -q "no connect() tables" <<<"$out"'
km_check_summary plots
