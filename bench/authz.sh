#!/usr/bin/env bash
# authz.sh — the L4 authorization decision's cost per SYN with 0, 100 and 1,000 policies (spread
# over namespaces, and all on the destination: the worst case) against a pass-only program, in
# the same run (see bench/authz_bench.c; it makes and leaves its own network namespace). ROUNDS
# overrides. Prints a markdown section. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
build/bench/authz_bench "${ROUNDS:-15}"
