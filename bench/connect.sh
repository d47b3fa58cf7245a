#!/usr/bin/env bash
# connect.sh — connect() through a service VIP with ENDPOINTS endpoints (loaded through the real
# xDS agent from a config file) vs. direct connects with no program attached, plus the programs'
# own run time (see bench/connect_bench.c). ENDPOINTS, ROUNDS, PER_ROUND override. Prints a
# markdown section. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/connect_env.sh
connect_run
