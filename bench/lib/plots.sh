#!/usr/bin/env bash
# plots.sh — the plots of docs/performance.md, drawn by gnuplot (Debian's gnuplot-nox) from that
# page's own tables, as SVG into docs/plots/ (committed beside the tables; `make bench` redraws
# them after writing the page):
#   connect-latency.svg  connect() p50 / p90 / p99 through a VIP, directly (the baseline) and
#                        through the reference program (the floor), at each scale;
#   full-sync.svg        push -> every row applied, and the xDS agent's peak RSS, by scale.
# Usage: bench/lib/plots.sh [PAGE [DIR]] (default docs/performance.md docs/plots). Exit 1 when a
# table is missing from the page (nothing to draw is an error, not an empty plot).
set -euo pipefail
cd "$(dirname "$0")/../.."
page=${1:-docs/performance.md}
dir=${2:-docs/plots}
command -v gnuplot >/dev/null || { echo "plots.sh: gnuplot is missing (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# connect(): one line per scale and variant: "scale variant p50 p90 p99"
awk '
	/^## connect\(\) through a VIP with [0-9]+ endpoints vs/ { scale = $7; next }
	/^## / { scale = "" }
	scale != "" && /^\| (direct, no program|through the VIP, programs attached|reference program)/ {
		split($0, f, "|")
		v = f[2]; gsub(/^ +| +$/, "", v)
		name = v ~ /^direct/ ? "direct" : (v ~ /^through/ ? "VIP" : "floor")
		printf "%s %s %s %s %s\n", scale, name, f[4], f[5], f[6]
	}' "$page" >"$tmp/connect.txt"
[ -s "$tmp/connect.txt" ] || { echo "plots.sh: no connect() tables in $page" >&2; exit 1; }
# one block per percentile, one column per variant: "label direct VIP floor"
for pct in 3 4 5; do
	awk -v c="$pct" '{ v[$1 " " $2] = $c; s[$1] = 1 }
		END { for (k in s) printf "%s %s %s %s %s\n", k, (k >= 1e6 ? k / 1e6 "M" : k / 1e3 "k"),
				v[k " direct"], v[k " VIP"], v[k " floor"] }' \
		"$tmp/connect.txt" | sort -n >"$tmp/connect-$pct.txt"
done
gnuplot <<EOF
set terminal svg size 900,420 font "sans,11" background rgb "white"
set output "$dir/connect-latency.svg"
set termoption noenhanced
set ylabel "microseconds"
set xlabel "endpoints behind the VIP"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top left opaque
set offsets 0, 0, graph 0.3, 0
set grid ytics
set yrange [0:*]
set multiplot layout 1,3 title "connect() latency by endpoints behind the VIP (bench/connect.sh; lower is better)"
set title "p50"
plot "$tmp/connect-3.txt" using 3:xtic(2) title "direct", "" using 4 title "via the VIP", "" using 5 title "floor (ref.)"
set title "p90"
plot "$tmp/connect-4.txt" using 3:xtic(2) notitle, "" using 4 notitle, "" using 5 notitle
set title "p99"
plot "$tmp/connect-5.txt" using 3:xtic(2) notitle, "" using 4 notitle, "" using 5 notitle
unset multiplot
EOF

# full sync: "workloads seconds agent-MB"
awk '
	/^## Full sync by scale: summary/ { on = 1; next }
	/^## / { on = 0 }
	on && /^\| [0-9]+ \|/ { split($0, f, "|"); printf "%s %s %s\n", f[2] + 0, f[4] + 0, f[9] + 0 }' \
	"$page" >"$tmp/sync.txt"
[ -s "$tmp/sync.txt" ] || { echo "plots.sh: no full-sync summary in $page" >&2; exit 1; }
gnuplot <<EOF
set terminal svg size 900,420 font "sans,11" background rgb "white"
set output "$dir/full-sync.svg"
set termoption noenhanced
set title "Full sync by scale (bench/xds_push.sh): one push of W workloads and W/10 services"
set logscale xy
set xlabel "workloads"
set ylabel "push -> every row applied (s)"
set y2label "xDS agent peak RSS (MB)"
set logscale y2
set ytics nomirror
set y2tics
set grid
set key top left
plot "$tmp/sync.txt" using 1:2 with linespoints lw 2 pt 7 title "push -> applied (s)", \
     "" using 1:3 axes x1y2 with linespoints lw 2 pt 5 title "agent peak RSS (MB)"
EOF
echo "plots.sh: drew $dir/connect-latency.svg and $dir/full-sync.svg from $page" >&2
