#!/usr/bin/env bash
# table_memory.sh — kernel memory of the routing tables at the map writer's default sizes, as
# the kernel accounts it (bpftool's bytes_memlock), with on-demand maps (the default: empty
# tables hold only their bucket arrays) and with --preallocate-tables. Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/lib/mesh-env.sh
TABLES="km_frontend km_service km_endpoint km_slot km_backend km_port_ovr km_manage"

trap km_env_cleanup EXIT
declare -A mem
for flag in "" --preallocate-tables; do
	km_env_setup kmm$$ >/dev/null
	km_map_writer_start --max-pods 16384 --max-frontends 262144 --max-services 65536 \
		--max-endpoints 262144 --max-backends 131072 --log-level warn $flag || exit 1
	for m in $TABLES; do
		mem[$m$flag]=$(bpftool -j map show pinned "$KM_DIR/bpffs/kmesh/maps/$m" |
			"$KM_PY" -c 'import json,sys; m=json.load(sys.stdin); print(m["bytes_memlock"], m["max_entries"])')
	done
	km_env_cleanup
done
echo "## Kernel memory of the routing tables at the default sizes"
echo
echo "Command: \`make bench\` (runs \`bench/table_memory.sh\`). \`bytes_memlock\` of each empty"
echo "table as \`bpftool map show\` reports it; a preallocated table holds every entry from the"
echo "start, an on-demand one its bucket array plus what its rows take as they come. km_slot (the"
echo "endpoint slots BPF picks from, twice --max-endpoints) is an array: always allocated whole."
echo
echo "| table | entries | on demand, empty (MiB) | preallocated (MiB) | preallocated, bytes per entry |"
echo "|---|---|---|---|---|"
t0=0 t1=0
for m in $TABLES; do
	read -r b0 n <<<"${mem[$m]}"
	read -r b1 _ <<<"${mem[$m--preallocate-tables]}"
	t0=$((t0 + b0)) t1=$((t1 + b1))
	awk -v m="$m" -v n="$n" -v a="$b0" -v b="$b1" \
		'BEGIN {printf "| %s | %d | %.1f | %.1f | %.0f |\n", m, n, a / 1048576, b / 1048576, b / n}'
done
awk -v a="$t0" -v b="$t1" 'BEGIN {printf "| all | | %.1f | %.1f | |\n", a / 1048576, b / 1048576}'
