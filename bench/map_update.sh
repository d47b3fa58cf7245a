#!/usr/bin/env bash
# map_update.sh — per-row vs batched map writes, with and without preallocation (see
# bench/map_update_bench.c). Prints a markdown section. Needs root (CAP_BPF).
set -euo pipefail
cd "$(dirname "$0")/.."
build/bench/map_update_bench "${ROWS:-100000}" "${REPS:-5}"
