#!/usr/bin/env bash
# big_service.sh — the xDS agent's model with one service of 100k and of 1M members, each against
# the same workloads in services of 10 members in the same run (bench/big_service_bench.c): no
# model operation may cost more per member as the service grows (issue 26). No root needed.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s -f mk/build.mk build/bench/big_service_bench >/dev/null
for n in ${BIG_SERVICE_MEMBERS:-100000 1000000}; do
	build/bench/big_service_bench "$n"
	echo
done
