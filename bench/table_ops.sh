#!/usr/bin/env bash
# table_ops.sh — table operations per second through a fresh map writer vs. raw bpf() batches
# (see bench/table_ops_bench.c), with on-demand maps (the default) and with
# --preallocate-tables. WORKLOADS, PER_SERVICE, REPS override. Prints markdown sections.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/lib/mesh-env.sh
WORKLOADS=${WORKLOADS:-100000}
PER_SERVICE=${PER_SERVICE:-100}
REPS=${REPS:-5}

trap km_env_cleanup EXIT
rows=$((WORKLOADS + WORKLOADS / PER_SERVICE + 1))
for flag in "" --preallocate-tables; do
	km_env_setup kmt$$ >/dev/null
	km_map_writer_start --max-frontends "$rows" --max-endpoints "$rows" --max-backends "$rows" \
		--max-services "$rows" --log-level warn $flag || exit 1
	build/bench/table_ops_bench --socket "$KM_SOCKET" --bpffs-dir "$KM_DIR/bpffs/kmesh" \
		--workloads "$WORKLOADS" --per-service "$PER_SERVICE" --reps "$REPS" |
		sed "1s/\$/${flag:+ (map writer with $flag)}/"
	echo
	km_env_cleanup
done
