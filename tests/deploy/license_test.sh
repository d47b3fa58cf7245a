#!/usr/bin/env bash
# license_test.sh — what LICENSE says holds: the license texts it names are there, every BPF
# source says it is GPL-2.0-only OR BSD-2-Clause, the linked BPF object declares a
# GPL-compatible license to the kernel ("Dual BSD/GPL"), and the chart and docs name the
# licenses the same way. Takes a second.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tests/lib/check.sh"
cd "$ROOT"

check "LICENSE names the texts it points to, and they are there" eval '
	for t in LICENSES/Apache-2.0.txt LICENSES/GPL-2.0-only.txt LICENSES/BSD-2-Clause.txt; do
		grep -q "$t" LICENSE && [ -s "$t" ] || exit 1
	done'
check "the license texts are the ones they are named for" eval '
	grep -q "Apache License" LICENSES/Apache-2.0.txt &&
	grep -q "Version 2.0, January 2004" LICENSES/Apache-2.0.txt &&
	grep -q "GNU GENERAL PUBLIC LICENSE" LICENSES/GPL-2.0-only.txt &&
	grep -q "Version 2, June 1991" LICENSES/GPL-2.0-only.txt &&
	grep -q "Redistributions in binary form" LICENSES/BSD-2-Clause.txt &&
	! grep -q "endorse or promote" LICENSES/BSD-2-Clause.txt'
unlabelled=$(find bpf bench/ref -name '*.[ch]' ! -name vmlinux.h -print0 |
	xargs -0 grep -L "SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)")
check "every BPF source says GPL-2.0-only OR BSD-2-Clause (${unlabelled:-all do})" [ -z "$unlabelled" ]
obj=build/bpf/kmesh.o
check "the BPF object declares Dual BSD/GPL to the kernel" eval \
	"[ -f $obj ] && readelf -p license $obj | grep -q 'Dual BSD/GPL'"
km_check_summary license
